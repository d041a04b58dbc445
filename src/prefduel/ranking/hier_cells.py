"""Hierarchical Bradley-Terry on *cells*: each group's deviation over offsets that vary by cell.

`prefduel.ranking.hier` fits ``theta_u = beta + delta_u`` with one global ``beta`` for every
battle of a user. A vote log with prompt categories needs the offset to depend on the battle:
``P(i beats j | u, c) = s(b_ci - b_cj + delta_ui - delta_uj)`` with ``b_c`` the global strengths
on category ``c``. The battles of one group (a voter) under one offset (a category) are
aggregated into a *cell* of pair counts, so a fit costs ``O(cells x pairs)`` per Newton step
whatever the number of battles:

    delta_g ~ N(0, tau^2 I),   log p(delta_g | W) = sum over the cells of g of the BT
    log-likelihood at (offset of the cell + delta_g)  -  |delta_g|^2 / (2 tau^2)

With one offset for every cell this is exactly `prefduel.ranking.hier` (the tests check it).
``tau`` is chosen by the Laplace approximation of the marginal likelihood, as there; each
group's posterior is the Gaussian ``N(delta_g, H_g^{-1})`` at the mode.

The same solver fits category effects (groups = categories, one offset: the global strengths)
and voters (groups = voters, offsets = the global strengths on each category).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse

from prefduel.core.btl import pairs_of
from prefduel.ranking.errors import RankingError
from prefduel.ranking.hier import TAU_BOUNDS, TAU_SAMPLE

#: Groups per batched Newton solve (memory bound: ``chunk x M x M`` floats).
_CHUNK_CELLS = 4_000_000


@dataclass(frozen=True)
class Cells:
    """Pair counts aggregated per cell: the battles of one group under one offset.

    Attributes:
        group: ``(n,)`` group of each cell (``0 .. n_groups - 1``; a group may have no cell).
        offset: ``(n,)`` row of the offsets table each cell is fitted under.
        wins: ``(n, P)`` wins of the first model of each pair (`pairs_of` order; ties
            count half a win each way).
        total: ``(n, P)`` battles of each pair.
        n_groups: Number of groups ``G``.
        n_models: Number of models ``M``.
    """

    group: np.ndarray
    offset: np.ndarray
    wins: np.ndarray
    total: np.ndarray
    n_groups: int
    n_models: int

    @property
    def n(self) -> int:
        """Number of cells."""
        return int(self.group.shape[0])

    def of_groups(self, groups: np.ndarray) -> Cells:
        """The cells of ``groups`` (``(G',)`` distinct indices), renumbered ``0 .. G'-1``."""
        slot = np.full(self.n_groups, -1, dtype=np.int64)
        slot[groups] = np.arange(groups.size)
        keep = slot[self.group] >= 0
        return Cells(
            slot[self.group[keep]], self.offset[keep], self.wins[keep], self.total[keep],
            int(groups.size), self.n_models,
        )


def battle_cells(
    a: np.ndarray,
    b: np.ndarray,
    outcome: np.ndarray,
    group: np.ndarray,
    offset: np.ndarray,
    n_groups: int,
    n_models: int,
) -> Cells:
    """Aggregate battles into one cell per distinct ``(group, offset)``.

    Args:
        a: ``(n,)`` first model of each battle.
        b: ``(n,)`` second model, never ``a``.
        outcome: ``(n,)`` 1 ``a`` won, 0 ``b`` won, 0.5 tie.
        group: ``(n,)`` group of each battle (a voter, a category).
        offset: ``(n,)`` row of the offsets table the battle is fitted under.
        n_groups: Number of groups.
        n_models: Number of models ``M``.

    Returns:
        The `Cells`, sorted by group then offset.
    """
    n_offsets = int(offset.max(initial=-1)) + 1
    key = group.astype(np.int64) * max(n_offsets, 1) + offset
    cells, cell_of = np.unique(key, return_inverse=True)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pair_index = np.full((n_models, n_models), -1, dtype=np.int64)
    pairs = pairs_of(n_models)
    pair_index[pairs[:, 0], pairs[:, 1]] = np.arange(pairs.shape[0])
    pair = pair_index[lo, hi]
    first_won = np.where(a == lo, outcome, 1.0 - outcome)
    n_pairs = pairs.shape[0]
    flat = cell_of * n_pairs + pair
    size = cells.size * n_pairs
    wins = np.bincount(flat, weights=first_won, minlength=size).reshape(cells.size, n_pairs)
    total = np.bincount(flat, minlength=size).astype(float).reshape(cells.size, n_pairs)
    return Cells(
        (cells // max(n_offsets, 1)).astype(np.int64),
        (cells % max(n_offsets, 1)).astype(np.int64),
        wins,
        total,
        int(n_groups),
        int(n_models),
    )


@dataclass(frozen=True)
class GroupFit:
    """Posterior of each group's deviation ``delta_g`` (``G`` groups, ``M`` models).

    Attributes:
        delta: ``(G, M)`` posterior modes (logits); a group without battles keeps 0.
        precision: ``(G, M, M)`` posterior precisions (negative Hessians at the modes).
        tau: The shrinkage level (logits).
        log_evidence: Laplace log marginal likelihood of all groups at ``tau``.
        converged: ``(G,)`` Newton met the tolerance.
    """

    delta: np.ndarray
    precision: np.ndarray
    tau: float
    log_evidence: float
    converged: np.ndarray

    def covariance_cholesky(self) -> np.ndarray:
        """``(G, M, M)`` lower Cholesky factors of the posterior covariances."""
        return np.linalg.cholesky(np.linalg.inv(self.precision))


def fit_groups(
    cells: Cells, offsets: np.ndarray, *, tau: float | None = None, seed: int = 0
) -> GroupFit:
    """Each group's deviation from the offsets, shrunk by one empirical-Bayes level ``tau``.

    Args:
        cells: The pair counts (`battle_cells`).
        offsets: ``(R, M)`` strengths (logits); cell ``i`` is fitted at ``offsets[offset[i]]``.
        tau: The level in logits; ``None`` chooses it by marginal likelihood (over a seeded
            subsample of `TAU_SAMPLE` groups when there are more).
        seed: Seed of that subsample.

    Raises:
        RankingError: no group, or a ``tau`` that is not a positive number.
    """
    if cells.n_groups == 0:
        raise RankingError("no groups to fit")
    if tau is not None and not (np.isfinite(tau) and tau > 0):
        raise RankingError(f"tau must be a positive number of logits, got {tau}")
    base = np.asarray(offsets, dtype=float) @ _incidence(cells.n_models).T
    if tau is None:
        tau = choose_tau(cells, base, seed=seed)
    return _posterior(cells, base, float(tau))


def choose_tau(cells: Cells, base: np.ndarray, *, seed: int = 0) -> float:
    """The ``tau`` maximizing the Laplace log marginal likelihood of the cells' groups.

    Args:
        cells: The pair counts.
        base: ``(R, P)`` offset differences per pair (``offsets @ incidence.T``).
        seed: Seed of the group subsample above `TAU_SAMPLE` groups.
    """
    if cells.n_groups > TAU_SAMPLE:
        pick = np.random.default_rng(seed).choice(cells.n_groups, TAU_SAMPLE, replace=False)
        cells = cells.of_groups(np.sort(pick))
    system = _System(cells, base)
    warm = np.zeros((cells.n_groups, cells.n_models))

    def negative_evidence(log_tau: float) -> float:
        tau = float(np.exp(log_tau))
        delta, hess, _ = system.newton(tau, warm)
        warm[:] = delta
        return -float(system.evidence(delta, hess, tau).sum())

    lo, hi = np.log(TAU_BOUNDS)
    best = optimize.minimize_scalar(
        negative_evidence, bounds=(lo, hi), method="bounded", options={"xatol": 0.02}
    )
    return float(np.exp(best.x))


def _posterior(cells: Cells, base: np.ndarray, tau: float) -> GroupFit:
    """The modes and precisions of every group, a memory-bounded chunk of groups at a time."""
    m = cells.n_models
    chunk = max(1, _CHUNK_CELLS // (m * m))
    deltas, hessians, converged, evidence = [], [], [], 0.0
    for start in range(0, cells.n_groups, chunk):
        groups = np.arange(start, min(start + chunk, cells.n_groups))
        part = cells if groups.size == cells.n_groups else cells.of_groups(groups)
        system = _System(part, base)
        delta, hess, ok = system.newton(tau, np.zeros((part.n_groups, m)))
        evidence += float(system.evidence(delta, hess, tau).sum())
        deltas.append(delta)
        hessians.append(hess)
        converged.append(ok)
    return GroupFit(
        delta=np.concatenate(deltas),
        precision=np.concatenate(hessians),
        tau=tau,
        log_evidence=evidence,
        converged=np.concatenate(converged),
    )


def _incidence(m: int) -> np.ndarray:
    """``(P, M)``: +1 at the first model of each pair, -1 at the second."""
    pairs = pairs_of(m)
    incidence = np.zeros((pairs.shape[0], m))
    incidence[np.arange(pairs.shape[0]), pairs[:, 0]] = 1.0
    incidence[np.arange(pairs.shape[0]), pairs[:, 1]] = -1.0
    return incidence


class _System:
    """One batch of groups: their cells, the sums over each group's cells, Newton and the
    Laplace evidence."""

    def __init__(self, cells: Cells, base: np.ndarray) -> None:
        self.cells = cells
        self.m = cells.n_models
        self.incidence = _incidence(self.m)
        self.pairs = pairs_of(self.m)
        self.base = base[cells.offset]  # (n, P)
        self.losses = cells.total - cells.wins  # the second model's wins
        ones = np.ones(cells.n)
        # (G, n) 0/1 matrix: summing each group's cells is one sparse product
        self.sum = sparse.csr_matrix(
            (ones, (cells.group, np.arange(cells.n))), shape=(cells.n_groups, cells.n)
        )

    def differences(self, delta: np.ndarray) -> np.ndarray:
        """``(n, P)`` strength differences of every cell's pairs."""
        return self.base + (delta @ self.incidence.T)[self.cells.group]

    def log_posterior(self, d: np.ndarray, delta: np.ndarray, tau: float) -> np.ndarray:
        """``(G,)`` log-likelihood of each group's cells minus the Gaussian penalty."""
        per_cell = (self.cells.total * -np.logaddexp(0.0, -d) - self.losses * d).sum(axis=1)
        return self.sum @ per_cell - 0.5 * (delta * delta).sum(axis=1) / (tau * tau)

    def precision(self, d: np.ndarray, tau: float) -> np.ndarray:
        """``(G, M, M)``: the weighted graph Laplacian of each group plus ``I / tau^2``."""
        p = 1.0 / (1.0 + np.exp(-d))
        v = np.asarray(self.sum @ (self.cells.total * p * (1.0 - p)))
        pi, pj = self.pairs[:, 0], self.pairs[:, 1]
        diag = np.arange(self.m)
        hess = np.zeros((v.shape[0], self.m, self.m))
        hess[:, pi, pj] = -v
        hess[:, pj, pi] = -v
        hess[:, diag, diag] = v @ np.abs(self.incidence) + 1.0 / (tau * tau)
        return hess

    def newton(
        self, tau: float, start: np.ndarray, max_iter: int = 100, tol: float = 1e-8
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Batched damped Newton ascent of each group's log posterior (steps halved per group
        until they do not lower it).

        Returns:
            ``(delta, precision, converged)``: ``(G, M)``, ``(G, M, M)``, ``(G,)``.
        """
        n_groups = self.cells.n_groups
        delta = start.copy()
        d = self.differences(delta)
        obj = self.log_posterior(d, delta, tau)
        converged = np.zeros(n_groups, dtype=bool)
        for _ in range(max_iter):
            hess = self.precision(d, tau)
            resid = self.cells.wins - self.cells.total / (1.0 + np.exp(-d))
            grad = np.asarray(self.sum @ resid) @ self.incidence - delta / (tau * tau)
            step = np.linalg.solve(hess, grad[..., None])[..., 0]
            scale = np.ones(n_groups)
            for _ in range(40):
                cand = delta + scale[:, None] * step
                d_new = self.differences(cand)
                new = self.log_posterior(d_new, cand, tau)
                worse = new < obj - 1e-12 * np.abs(obj)
                if not worse.any():
                    break
                scale[worse] *= 0.5
            delta, d, obj = cand, d_new, new
            converged |= np.abs(scale[:, None] * step).max(axis=1) < tol
            if converged.all():
                break
        return delta, self.precision(d, tau), converged

    def evidence(self, delta: np.ndarray, hess: np.ndarray, tau: float) -> np.ndarray:
        """``(G,)`` Laplace log marginal likelihood of each group (unseen models add 0)."""
        log_post = self.log_posterior(self.differences(delta), delta, tau)
        _, logdet = np.linalg.slogdet(hess * (tau * tau))
        return log_post - 0.5 * logdet


__all__ = ["Cells", "GroupFit", "battle_cells", "choose_tau", "fit_groups"]
