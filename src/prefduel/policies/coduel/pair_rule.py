"""CODuel's pair rules: greedy, and the knowledge-gradient lookahead for strong regret.

Under a mixture belief with weights ``w_c`` and component means ``mu_c``, the belief-averaged
strong regret of showing ``(i, j)`` on a question with features ``Phi`` is
``sum_c w_c (2 max_p u_cp - u_ci - u_cj)`` with ``u_c = Phi mu_c``. Greedy play minimizes it
(the top two of the mixture-mean utilities, `prefduel.core.btl.top_two`). The lookahead rule
scores each pair by

    regret_now(i, j) + remaining * sum_y P(y | i, j) G(belief after observing y on (i, j))

where ``G`` is the belief-averaged regret of greedy play, averaged over a bank of recent
questions: a knowledge-gradient rule (Frazier, Powell & Dayanik, 2008) for strong regret. A
click that tells components apart lowers ``G`` for the rest of the session.

Two values of the best persona in ``G`` (``value``):

- ``"updated"`` (CODuel's ``pair=lookahead-legacy``, its earlier default, also accepted as
  ``pair=lookahead``; kept only to reproduce earlier figures): ``sum_c w'_c max_p u'_cp`` with
  each component's mean *after* the hypothetical click. Within a component the means move with
  the click, so by Jensen's inequality the expectation of this term rises with how far a click
  would move them: it charges a pair for what it teaches inside a component, not only for the
  decision. This is a bias, not a value: removing it gives ``"decision"``, so the corrected
  rule is ``pair=kg`` and the legacy rule keeps its old behaviour under its own name.
- ``"decision"`` (CODuel's default, ``pair=kg``): the belief's expected best-persona utility
  does not depend on which pair is
  shown (under the exact belief, ``E_y E[max_p u_p | y] = E[max_p u_p]``), so it is taken from
  the current belief, the same for every pair and outcome, and pairs differ only by the regret
  now and the expected top-two mixture-mean utility after their click: a knowledge gradient on
  the decision under the mixture belief.
"""

from __future__ import annotations

import functools

import numpy as np

from prefduel.core import jit
from prefduel.core.btl import pairs_of, sigmoid
from prefduel.core.laplace import PROBIT, solve_step
from prefduel.policies.coduel import kernels


def greedy_regret(weights: np.ndarray, utilities: np.ndarray) -> np.ndarray:
    """Belief-averaged regret of greedy play.

    Args:
        weights: ``(..., C)`` component weights.
        utilities: ``(..., C, Q, K)`` utilities under each component on Q questions.

    Returns:
        ``(..., Q)`` regret of showing the top two of the mixture-mean utilities.
    """
    best = (weights[..., None] * utilities.max(axis=-1)).sum(axis=-2)  # (..., Q)
    mean_u = np.einsum("...c,...cqk->...qk", weights, utilities)
    top2 = -np.partition(-mean_u, 1, axis=-1)[..., :2].sum(axis=-1)
    return 2.0 * best - top2


LOOKAHEAD_VALUES = ("updated", "decision")


@functools.cache
def _pairs(k: int) -> np.ndarray:
    """`pairs_of` ``k``, contiguous and computed once per ``k``."""
    return np.ascontiguousarray(pairs_of(k))


def _outcome_beliefs(
    weights: np.ndarray, mu: np.ndarray, sigma: np.ndarray, z: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Beliefs after each outcome of each pair's click, in factored form.

    Both outcomes of a (component, pair) share ``Sigma_c z_p``, ``z_p . mu_c`` and
    ``z_p . Sigma_c z_p``; only the scalar step differs, so the updated means are
    ``mu_c + alpha[y, c, p] Sigma_c z_p`` and are never formed here.

    Args:
        weights: ``(C,)`` normalized component weights.
        mu: ``(C, d)`` component means; sigma: ``(C, d, d)`` covariances.
        z: ``(P, d)`` click features of the pairs.

    Returns:
        ``(p_y (2, P), new_w (2, C, P), alpha (2, C, P), sz (C, d, P))``: outcome
        probabilities (row 0: the first item wins), component weights after each outcome,
        the scalar steps and the directions ``Sigma_c z_p``.
    """
    sz = sigma @ z.T  # (C, d, P)
    m = mu @ z.T  # (C, P)
    s = np.einsum("cdp,pd->cp", sz, z)
    p_first = sigmoid(m / np.sqrt(1.0 + PROBIT * s))
    y = np.empty((2, *m.shape))
    y[0], y[1] = 1.0, 0.0
    alpha = solve_step(
        np.broadcast_to(m, y.shape),
        np.broadcast_to(s, y.shape),
        y,
        np.broadcast_to(p_first, y.shape),
    )
    joint = np.stack([p_first, 1.0 - p_first]) * weights[:, None]  # (2, C, P): P(y, c | pair)
    p_y = joint.sum(axis=1)  # (2, P)
    new_w = joint / np.maximum(p_y[:, None], 1e-300)
    return p_y, new_w, alpha, sz


def lookahead_pair(
    weights: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    phi: np.ndarray,
    bank: np.ndarray,
    remaining: int,
    value: str = "updated",
    *,
    compiled: bool | None = None,
) -> tuple[tuple[int, int], np.ndarray]:
    """Knowledge-gradient pair choice.

    Args:
        weights: ``(C,)`` normalized component weights.
        mu: ``(C, d)`` component means; sigma: ``(C, d, d)`` covariances.
        phi: ``(K, d)`` features of the current question.
        bank: ``(Q, K, d)`` features of recent questions.
        remaining: Rounds left in the session after this one.
        value: Value of the best persona after a click: ``"updated"`` (each component's
            updated mean: the legacy rule, biased by Jensen's inequality) or ``"decision"``
            (the current belief's, the same for every pair); see the module docstring.
        compiled: Use the compiled kernel (`prefduel.policies.coduel.kernels`); None: when
            numba is installed. Both give the same values to rounding.

    Returns:
        The chosen pair (higher mixture-mean utility first) and the ``(n_pairs,)`` values.

    Raises:
        ValueError: ``value`` is not one of `LOOKAHEAD_VALUES`.
    """
    if value not in LOOKAHEAD_VALUES:
        raise ValueError(f"value must be one of {', '.join(LOOKAHEAD_VALUES)}, got {value!r}")
    pairs = _pairs(phi.shape[0])
    if jit.ENABLED if compiled is None else compiled:
        values = kernels.lookahead_values(
            np.ascontiguousarray(weights, dtype=float),
            np.ascontiguousarray(mu, dtype=float),
            np.ascontiguousarray(sigma, dtype=float),
            np.ascontiguousarray(phi, dtype=float),
            np.ascontiguousarray(bank, dtype=float),
            pairs,
            float(remaining),
            value == "updated",
        )
    else:
        values = _lookahead_values(weights, mu, sigma, phi, bank, remaining, value)
    chosen = pairs[int(np.argmin(values))]
    mean_now = weights @ (mu @ phi.T)
    i, j = (int(chosen[0]), int(chosen[1]))
    if mean_now[j] > mean_now[i]:
        i, j = j, i
    return (i, j), values


def _lookahead_values(
    weights: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    phi: np.ndarray,
    bank: np.ndarray,
    remaining: int,
    value: str,
) -> np.ndarray:
    """The ``(n_pairs,)`` values of `lookahead_pair` in numpy."""
    k = phi.shape[0]
    n_comp, d = mu.shape
    pairs = pairs_of(k)
    n_pairs = pairs.shape[0]
    u_now = mu @ phi.T  # (C, K)
    regret_now = weights @ (
        2.0 * u_now.max(axis=1, keepdims=True) - u_now[:, pairs[:, 0]] - u_now[:, pairs[:, 1]]
    )
    z = phi[pairs[:, 0]] - phi[pairs[:, 1]]  # (P, d)
    p_y, new_w, alpha, sz = _outcome_beliefs(weights, mu, sigma, z)
    n_bank = bank.shape[0]
    # personas before questions, so the max over personas runs over whole rows (fast in numpy)
    bank_kq = bank.transpose(1, 0, 2).reshape(k * n_bank, d)
    u_bank = mu @ bank_kq.T  # (C, K*Q): utilities under the current means
    shift = sz.transpose(0, 2, 1) @ bank_kq.T  # (C, P, K*Q): per unit of alpha
    if value == "updated":
        util = u_bank[None, :, None] + alpha[..., None] * shift[None]  # (2, C, P, K*Q)
        top = util.reshape(2, n_comp, n_pairs, k, n_bank).max(axis=3)
        best = np.einsum("ycp,ycpq->ypq", new_w, top)
    else:  # one value for every pair and outcome: the current belief's
        best = weights @ u_bank.reshape(n_comp, k, n_bank).max(axis=1)  # (Q,)
    # mixture-mean utilities after each outcome: sum_c w'_c (u_c + alpha_c shift_c)
    mean_u = new_w.transpose(0, 2, 1) @ u_bank + (
        (new_w * alpha).transpose(2, 0, 1) @ shift.transpose(1, 0, 2)
    ).transpose(1, 0, 2)
    mean_u = mean_u.reshape(2, n_pairs, k, n_bank)
    top2 = -np.partition(-mean_u, 1, axis=2)[:, :, :2].sum(axis=2)
    future = (p_y * (2.0 * best - top2).mean(axis=-1)).sum(axis=0)  # (P,)
    values = regret_now + remaining * future
    return values
