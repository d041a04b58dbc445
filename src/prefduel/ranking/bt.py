"""Bradley-Terry ratings by maximum likelihood on aggregated win matrices, batched.

``P(i beats j) = sigma(beta_i - beta_j)``; a tie counts as half a win for each side. The battles
are first aggregated into a win matrix ``W`` (``W[i, j]`` = wins of ``i`` over ``j``, ties
halved), so a fit costs ``O(M^3)`` per Newton step whatever the number of battles. Fits are
batched over a leading axis (users, bootstrap replicates) and solved together (the damped Newton
solver is `prefduel.ranking.bt_solver`).

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
from typing import Literal

import numpy as np

from prefduel.ranking.battles import Battles
from prefduel.ranking.bt_solver import newton_ascent
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
    beta, converged, iterations = newton_ascent(wins, seen, penalties)
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
