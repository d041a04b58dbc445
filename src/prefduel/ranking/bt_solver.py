"""The batched damped Newton solver of the Bradley-Terry fits of `prefduel.ranking.bt`.

The (penalized) log-likelihood is written over the ``P = M(M-1)/2`` unordered pairs of models,
so each step solves one ``M x M`` system per data set whatever the number of battles; a step
that would lower the objective is halved until it does not.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def _objective(
    log_p: np.ndarray, d: np.ndarray, n: np.ndarray, w_ji: np.ndarray, beta: np.ndarray, ridge
) -> np.ndarray:
    """Penalized log-likelihood per data set from pair quantities ``(B, P)``.

    With ``d = beta_i - beta_j`` over pairs ``i < j``:
    ``sum w_ij log s(d) + w_ji log s(-d) = sum n log s(d) - w_ji d``.
    """
    return (n * log_p - w_ji * d).sum(axis=1) - 0.5 * ridge * (beta * beta).sum(axis=1)


class _Pairs(NamedTuple):
    """The ``P = M(M-1)/2`` unordered pairs ``i < j`` of ``M`` models.

    Attributes:
        pi: ``(P,)`` first model of each pair.
        pj: ``(P,)`` second model of each pair.
        incidence: ``(P, M)`` +1 at ``i``, -1 at ``j``: ``beta @ incidence.T`` is
            ``beta_i - beta_j`` per pair.
    """

    pi: np.ndarray
    pj: np.ndarray
    incidence: np.ndarray

    @classmethod
    def of(cls, m: int) -> _Pairs:
        pi, pj = np.triu_indices(m, 1)
        incidence = np.zeros((pi.size, m))
        incidence[np.arange(pi.size), pi] = 1.0
        incidence[np.arange(pi.size), pj] = -1.0
        return cls(pi, pj, incidence)


def newton_ascent(
    wins: np.ndarray,
    seen: np.ndarray,
    ridge: np.ndarray,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Batched damped Newton ascent of the (penalized) BT log-likelihood.

    Works on the ``P = M(M-1)/2`` unordered pairs; each step solves ``B`` systems ``M x M``.
    A step that would lower the objective is halved (per data set) until it does not.

    Args:
        wins: ``(B, M, M)`` win matrices.
        seen: ``(B, M)`` models present (unseen models are held at 0).
        ridge: ``(B,)`` penalties; 0 means unregularized (the caller guarantees the MLE exists).

    Returns:
        ``(beta, converged, iterations)``: logits ``(B, M)``, ``(B,)`` flags, iterations used.
    """
    n_sets, m, _ = wins.shape
    pairs = _Pairs.of(m)
    w_ij, w_ji = wins[:, pairs.pi, pairs.pj], wins[:, pairs.pj, pairs.pi]
    n = w_ij + w_ji
    fixed = _fixed_hessian(seen, ridge)
    beta = np.zeros((n_sets, m))
    d = np.zeros((n_sets, pairs.pi.size))
    log_p = np.full(d.shape, -np.log(2.0))
    obj = _objective(log_p, d, n, w_ji, beta, ridge)
    converged = np.zeros(n_sets, dtype=bool)
    active = np.arange(n_sets)
    iterations = 0
    for it in range(1, max_iter + 1):
        iterations = it
        sel = slice(None) if active.size == n_sets else active  # views while all are active
        bt, rd, sn, na, wa = beta[sel], ridge[sel], seen[sel], n[sel], w_ij[sel]
        wj = w_ji[sel]
        hess = fixed[active] if sel is active else fixed.copy()
        step = _newton_direction(hess, bt, rd, sn, na, wa, np.exp(log_p[sel]), pairs)
        scale, d_new, lp_new, new = _damped(step, d[sel], obj[sel], bt, rd, na, wj, pairs)
        beta[sel] = bt + scale[:, None] * step
        d[sel], log_p[sel], obj[sel] = d_new, lp_new, new
        done = np.abs(scale[:, None] * step).max(axis=1) < tol
        converged[active[done]] = True
        active = active[~done]
        if active.size == 0:
            break
    return beta, converged, iterations


def _fixed_hessian(seen: np.ndarray, ridge: np.ndarray) -> np.ndarray:
    """Constant part of the (negated) Hessian, ``(B, M, M)``.

    Identity rows for unseen models and, when unregularized, the rank-one term
    ``(1/m) s s^T`` over seen models that removes the translation freedom (the gradient is
    orthogonal to ``s``, so the step is too).
    """
    m = seen.shape[1]
    diag = np.arange(m)
    m_seen = np.maximum(seen.sum(axis=1), 1)[:, None, None]
    fixed = np.where(
        (ridge == 0)[:, None, None], (seen[:, :, None] & seen[:, None, :]) / m_seen, 0.0
    )
    fixed[:, diag, diag] += ~seen
    return fixed


def _newton_direction(
    hess: np.ndarray,
    beta: np.ndarray,
    ridge: np.ndarray,
    seen: np.ndarray,
    n: np.ndarray,
    w_ij: np.ndarray,
    p: np.ndarray,
    pairs: _Pairs,
) -> np.ndarray:
    """The full Newton step ``(A, M)`` of ``A`` active data sets (0 for unseen models).

    Args:
        hess: ``(A, M, M)`` the constant part (`_fixed_hessian`), completed in place.
        beta: ``(A, M)`` current logits.
        ridge: ``(A,)`` penalties.
        seen: ``(A, M)`` models present.
        n: ``(A, P)`` battles per pair.
        w_ij: ``(A, P)`` wins of ``i`` over ``j``.
        p: ``(A, P)`` current ``P(i beats j)``.
        pairs: The pairs.
    """
    grad = (w_ij - n * p) @ pairs.incidence - ridge[:, None] * beta
    v = n * p * (1.0 - p)
    diag = np.arange(hess.shape[-1])
    hess[:, pairs.pi, pairs.pj] -= v
    hess[:, pairs.pj, pairs.pi] -= v
    hess[:, diag, diag] += v @ np.abs(pairs.incidence) + ridge[:, None]
    step = np.linalg.solve(hess, grad[..., None])[..., 0]
    return np.where(seen, step, 0.0)


def _damped(
    step: np.ndarray,
    d_old: np.ndarray,
    old: np.ndarray,
    beta: np.ndarray,
    ridge: np.ndarray,
    n: np.ndarray,
    w_ji: np.ndarray,
    pairs: _Pairs,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Halve each data set's ``step`` until the objective does not drop (at most 40 times).

    Args:
        step: ``(A, M)`` full Newton steps.
        d_old: ``(A, P)`` current pair differences ``beta_i - beta_j``.
        old: ``(A,)`` current objective.
        beta: ``(A, M)`` current logits.
        ridge: ``(A,)`` penalties.
        n: ``(A, P)`` battles per pair.
        w_ji: ``(A, P)`` wins of ``j`` over ``i``.
        pairs: The pairs.

    Returns:
        ``(scale, d, log_p, objective)`` after the step: ``(A,)``, ``(A, P)``, ``(A, P)``,
        ``(A,)``.
    """
    d_step = step @ pairs.incidence.T
    scale = np.ones(step.shape[0])
    d_new = d_old + d_step
    lp_new = _log_sigmoid(d_new)
    new = _objective(lp_new, d_new, n, w_ji, beta + step, ridge)
    for _ in range(40):
        worse = new < old - 1e-12 * np.abs(old)
        if not worse.any():
            break
        scale[worse] *= 0.5
        sw = scale[worse][:, None]
        d_new[worse] = d_old[worse] + sw * d_step[worse]
        lp_new[worse] = _log_sigmoid(d_new[worse])
        new[worse] = _objective(
            lp_new[worse],
            d_new[worse],
            n[worse],
            w_ji[worse],
            beta[worse] + sw * step[worse],
            ridge[worse],
        )
    return scale, d_new, lp_new, new


__all__ = ["newton_ascent"]
