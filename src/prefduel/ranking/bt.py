"""Bradley-Terry ratings by maximum likelihood on aggregated win matrices, batched.

``P(i beats j) = sigma(beta_i - beta_j)``; a tie counts as half a win for each side. The battles
are first aggregated into a win matrix ``W`` (``W[i, j]`` = wins of ``i`` over ``j``, ties
halved), so a fit costs ``O(M^3)`` per Newton step whatever the number of battles. Fits are
batched over a leading axis (users, bootstrap replicates) and solved together.

Modes:
    ``"mle"``: the unregularized maximum-likelihood estimate (paper-faithful). It exists and is
        unique exactly when the directed "beat at least once" graph of the models is strongly
        connected (Ford 1957; Hunter 2004). When it is not (a model that never wins or never
        loses, or separated groups), the fit is flagged and falls back to the ridge estimate --
        never inf or NaN.
    ``"ridge"``: maximizes ``loglik - ridge/2 |beta|^2`` (a Gaussian prior of s.d.
        ``1/sqrt(ridge)`` logits); always finite.

Scores are reported on the Elo scale: ``1000 + 400/ln(10) * (beta - mean(beta))`` over the models
the data saw (NaN for models it did not see).

References:
    Bradley & Terry (1952), Rank analysis of incomplete block designs.
    Ford (1957), Solution of a ranking problem from binary comparisons.
    Hunter (2004), MM algorithms for generalized Bradley-Terry models. Annals of Statistics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

from prefduel.ranking.battles import Battles
from prefduel.ranking.errors import RankingError

BTMode = Literal["mle", "ridge"]
BT_MODES: tuple[str, ...] = ("mle", "ridge")
ELO_PER_LOGIT = 400.0 / np.log(10.0)
ANCHOR = 1000.0
DEFAULT_RIDGE = 0.1
#: Fits with more than this many ``M x M`` cells are split into chunks (memory bound).
_CHUNK_CELLS = 4_000_000


@dataclass(frozen=True)
class BTFit:
    """Bradley-Terry fits of ``B`` independent data sets over ``M`` models.

    Attributes:
        scores: ``(B, M)`` Elo-scale scores (anchor 1000 = mean over seen models); NaN unseen.
        logits: ``(B, M)`` centered log-strengths; NaN unseen.
        seen: ``(B, M)`` the model took part in at least one battle.
        mle_exists: ``(B,)`` the unregularized MLE exists (strongly connected data).
        fallback: ``(B,)`` mode was ``"mle"`` but the MLE does not exist, so ridge was used.
        never_won: ``(B, M)`` seen models with no win (not even half a win).
        never_lost: ``(B, M)`` seen models with no loss.
        converged: ``(B,)`` Newton's method met the tolerance.
        iterations: Newton iterations of the slowest fit.
        mode: ``"mle"`` or ``"ridge"``.
        ridge: The ridge used by ridge fits and fallbacks.
    """

    scores: np.ndarray
    logits: np.ndarray
    seen: np.ndarray
    mle_exists: np.ndarray
    fallback: np.ndarray
    never_won: np.ndarray
    never_lost: np.ndarray
    converged: np.ndarray
    iterations: int
    mode: str
    ridge: float


def win_matrix(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_models: int) -> np.ndarray:
    """Aggregate battles into a win matrix.

    Args:
        a: ``(n,)`` first model indices.
        b: ``(n,)`` second model indices.
        outcome: ``(n,)`` 1 a won, 0 b won, 0.5 tie.
        n_models: ``M``.

    Returns:
        ``(M, M)`` with ``W[i, j]`` = wins of ``i`` over ``j`` (ties count 0.5 each way).
    """
    m2 = n_models * n_models
    w = np.bincount(a * n_models + b, weights=outcome, minlength=m2)
    w += np.bincount(b * n_models + a, weights=1.0 - outcome, minlength=m2)
    return w.reshape(n_models, n_models)


def win_matrices(
    a: np.ndarray,
    b: np.ndarray,
    outcome: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    n_models: int,
) -> np.ndarray:
    """Aggregate battles into one win matrix per group (user), ``(G, M, M)``."""
    m2 = n_models * n_models
    base = group * m2
    w = np.bincount(base + a * n_models + b, weights=outcome, minlength=n_groups * m2)
    w += np.bincount(base + b * n_models + a, weights=1.0 - outcome, minlength=n_groups * m2)
    return w.reshape(n_groups, n_models, n_models)


def bt_ratings(battles: Battles, mode: BTMode = "mle", ridge: float = DEFAULT_RIDGE) -> BTFit:
    """Global Bradley-Terry fit of all battles (one data set, ``B = 1``).

    Args:
        battles: Validated battles.
        mode: ``"mle"`` (unregularized; ridge fallback when the MLE does not exist) or
            ``"ridge"``.
        ridge: Penalty of ridge fits and fallbacks (> 0).

    Returns:
        A `BTFit` with leading dimension 1.
    """
    _check(mode, ridge)
    wins = win_matrix(battles.a, battles.b, battles.outcome, battles.n_models)
    return _fit(wins[None], mode, ridge)


def bt_per_user(
    battles: Battles,
    users: np.ndarray | None = None,
    mode: BTMode = "mle",
    ridge: float = DEFAULT_RIDGE,
) -> BTFit:
    """Bradley-Terry fit of each user on their own battles, batched Newton over users.

    Args:
        battles: Validated battles.
        users: Indices of the users to fit, ``(U',)`` (default: all).
        mode: ``"mle"`` or ``"ridge"``.
        ridge: Penalty of ridge fits and fallbacks (> 0).

    Returns:
        A `BTFit` with leading dimension ``U'``; models a user never saw are NaN.
    """
    _check(mode, ridge)
    users = np.arange(battles.n_users) if users is None else np.asarray(users, dtype=np.int64)
    m = battles.n_models
    slot = np.full(battles.n_users, -1, dtype=np.int64)
    slot[users] = np.arange(users.size)
    rows = np.flatnonzero(slot[battles.user] >= 0)
    group = slot[battles.user[rows]]
    a, b, s = battles.a[rows], battles.b[rows], battles.outcome[rows]
    chunk = max(1, _CHUNK_CELLS // (m * m))
    parts = []
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(0, users.size + chunk, chunk))
    for c, lo in enumerate(range(0, users.size, chunk)):
        hi = min(lo + chunk, users.size)
        sel = order[bounds[c] : bounds[c + 1]]
        wins = win_matrices(a[sel], b[sel], s[sel], group[sel] - lo, hi - lo, m)
        parts.append(_fit(wins, mode, ridge))
    return _concat(parts, mode, ridge)


def bt_from_wins(wins: np.ndarray, mode: BTMode = "mle", ridge: float = DEFAULT_RIDGE) -> BTFit:
    """Bradley-Terry fits of win matrices ``(B, M, M)`` (or one ``(M, M)``, then ``B = 1``).

    Args:
        wins: ``W[..., i, j]`` = wins of ``i`` over ``j`` (non-negative; ties as halves).
        mode: ``"mle"`` or ``"ridge"``.
        ridge: Penalty of ridge fits and fallbacks (> 0).
    """
    _check(mode, ridge)
    wins = np.asarray(wins, dtype=float)
    if wins.ndim == 2:
        wins = wins[None]
    if wins.ndim != 3 or wins.shape[1] != wins.shape[2]:
        raise RankingError(f"win matrices must be (B, M, M) or (M, M), got shape {wins.shape}")
    if not np.all(np.isfinite(wins)) or np.any(wins < 0):
        raise RankingError("win matrices must be finite and non-negative")
    return _fit(wins, mode, ridge)


def bt_bootstrap(
    battles: Battles,
    rng: np.random.Generator,
    n_boot: int,
    mode: BTMode = "mle",
    ridge: float = DEFAULT_RIDGE,
) -> BTFit:
    """Global BT fits of bootstrap resamples of the battles.

    Resampling ``n`` battles with replacement is the same as drawing the counts of each distinct
    ``(a, b, outcome)`` cell from a multinomial, so each replicate costs ``O(M^2)`` to draw.
    Replicates are drawn and fitted in chunks of at most `_CHUNK_CELLS` cells, so memory does
    not grow with ``n_boot`` (the draws are those of one call: the stream is consumed in order).

    Returns:
        A `BTFit` with leading dimension ``n_boot``.
    """
    _check(mode, ridge)
    m = battles.n_models
    code = np.round(battles.outcome * 2).astype(np.int64)  # 0, 1, 2
    cells = np.bincount((battles.a * m + battles.b) * 3 + code, minlength=m * m * 3)
    nz = np.flatnonzero(cells)
    share = cells[nz] / cells[nz].sum()
    pair, cls = np.divmod(nz, 3)
    i, j = np.divmod(pair, m)
    s = cls / 2.0
    chunk = max(1, _CHUNK_CELLS // max(m * m, nz.size))
    parts = []
    for lo in range(0, n_boot, chunk):
        size = min(chunk, n_boot - lo)
        counts = rng.multinomial(battles.n, share, size=size)
        wins = np.zeros((size, m * m))
        np.add.at(wins.T, i * m + j, (counts * s).T)
        np.add.at(wins.T, j * m + i, (counts * (1.0 - s)).T)
        parts.append(_fit(wins.reshape(size, m, m), mode, ridge))
    if not parts:  # no replicates: an empty fit of the right shape
        return _fit(np.zeros((0, m, m)), mode, ridge)
    return _concat(parts, mode, ridge)


def to_elo(logits: np.ndarray, seen: np.ndarray | None = None) -> np.ndarray:
    """Elo-scale scores ``1000 + 400/ln 10 * (beta - mean over seen)``; NaN where unseen."""
    logits = np.asarray(logits, dtype=float)
    seen = np.ones(logits.shape, dtype=bool) if seen is None else seen
    centered = logits - _seen_mean(logits, seen)[..., None]
    return np.where(seen, ANCHOR + ELO_PER_LOGIT * centered, np.nan)


# -- computation ----------------------------------------------------------------------------


def _check(mode: str, ridge: float) -> None:
    if mode not in BT_MODES:
        raise RankingError(f"BT mode must be one of {BT_MODES}, got {mode!r}")
    if not (np.isfinite(ridge) and ridge > 0):
        raise RankingError(f"BT ridge must be a positive number, got {ridge}")


def _seen_mean(x: np.ndarray, seen: np.ndarray) -> np.ndarray:
    n = np.maximum(seen.sum(axis=-1), 1)
    return np.where(seen, x, 0.0).sum(axis=-1) / n


def strongly_connected(wins: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Whether the seen models of each data set form one strongly connected "beat" graph.

    Edge ``i -> j`` when ``i`` won at least half a battle against ``j``. The unregularized BT MLE
    exists and is unique exactly when this holds (Ford 1957).

    Args:
        wins: ``(B, M, M)`` win matrices.
        seen: ``(B, M)`` models present.

    Returns:
        ``(B,)`` booleans.
    """
    m = wins.shape[-1]
    reach = (wins > 0).astype(np.float32)
    reach[:, np.arange(m), np.arange(m)] = 1.0
    for _ in range(max(1, int(np.ceil(np.log2(max(m - 1, 2)))))):
        reach = (reach @ reach > 0).astype(np.float32)
    both = seen[:, :, None] & seen[:, None, :]
    return np.all((reach > 0) | ~both, axis=(1, 2))


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


def _newton(
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


def _fit(wins: np.ndarray, mode: str, ridge: float) -> BTFit:
    n_sets = wins.shape[0]
    total = wins + np.swapaxes(wins, 1, 2)
    played = total.sum(axis=2)
    seen = played > 0
    won = wins.sum(axis=2)
    lost = wins.sum(axis=1)
    exists = strongly_connected(wins, seen)
    use_mle = exists if mode == "mle" else np.zeros(n_sets, dtype=bool)
    penalties = np.where(use_mle, 0.0, float(ridge))
    beta, converged, iterations = _newton(wins, seen, penalties)
    beta = beta - _seen_mean(beta, seen)[:, None]
    logits = np.where(seen, beta, np.nan)
    return BTFit(
        scores=to_elo(beta, seen),
        logits=logits,
        seen=seen,
        mle_exists=exists,
        fallback=(~exists) if mode == "mle" else np.zeros(n_sets, dtype=bool),
        never_won=seen & (won <= 0),
        never_lost=seen & (lost <= 0),
        converged=converged,
        iterations=iterations,
        mode=mode,
        ridge=float(ridge),
    )


def _concat(parts: list[BTFit], mode: str, ridge: float) -> BTFit:
    if not parts:
        raise RankingError("no users to fit")
    if len(parts) == 1:
        return parts[0]
    names = (
        "scores",
        "logits",
        "seen",
        "mle_exists",
        "fallback",
        "never_won",
        "never_lost",
        "converged",
    )
    arrays = {n: np.concatenate([getattr(p, n) for p in parts]) for n in names}
    return BTFit(
        **arrays, iterations=max(p.iterations for p in parts), mode=mode, ridge=float(ridge)
    )
