"""Model selection for CODuel's population: mixtures refitted from scratch, kept by BIC.

CODuel's mixture grows one session at a time: births from single users, deaths, warm-started
EM. EM never leaves the layout it starts from, and on ``dev`` that layout is worse for the
decisions than it need be: fitted with the true profile of each user known (a hindsight
diagnostic, ``benchmarks/clicks_directions.py``), the same summaries give a population 1.9
points better. At points of the refit schedule, `restarted_population` fits mixtures of several
sizes from k-means starts on the users' posterior means under the isotropic prior (the
tightest of ``restarts`` partitions per size) and returns the one of highest BIC (the log
likelihood of every user's summary less `Population.split_penalty` per learned component) if
it beats the current mixture's BIC.

The schedule bounds the cost per session: restarts happen at a refit point only once the number
of users has grown by the factor ``growth`` since the last one (O(log N) restarts in a run, each
O(n) E-steps), so the cost per arrival stays flat in the number of users, as the full passes of
the incremental EM.
"""

from __future__ import annotations

import copy

import numpy as np

from prefduel.core import jit
from prefduel.policies.coduel.population import Population, component_evidence

#: Mixture sizes (learned components) tried at each restart.
SIZES = (4, 6, 8, 10, 12)
#: Fewest users before the first restart.
FIRST = 30
#: Lloyd iterations of the k-means start.
KMEANS_ITERS = 10
#: Ridge added to a k-means cluster's scatter (the start's covariance).
START_RIDGE = 0.1


def bic(pop: Population, lam: np.ndarray, h: np.ndarray) -> float:
    """BIC of a mixture on summaries ``lam (n, d, d)``, ``h (n, d)``: the log likelihood of
    every user's summary (up to a constant per user) less `Population.split_penalty` per
    learned component."""
    loglik, _, _ = component_evidence(lam, h, pop.mu, pop.cov)
    penalty = pop.split_penalty(lam.shape[0]) * pop.n_learned
    return pop._total_loglik(loglik, pop.counts) - penalty


def isotropic_means(lam: np.ndarray, h: np.ndarray, prior_var: float) -> np.ndarray:
    """Posterior means ``(n, d)`` of the users under the isotropic prior ``N(0, prior_var I)``."""
    prec = lam + np.eye(lam.shape[-1]) / prior_var
    return np.linalg.solve(prec, h[..., None])[..., 0]


def kmeans(theta: np.ndarray, size: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Lloyd's k-means of ``theta (n, d)`` from ``size`` distinct users as centers (compiled
    when `prefduel.core.jit.ENABLED`; both paths give the same partition to the bit).

    Returns:
        ``(assign (n,), inertia)``: each user's cluster and the summed squared distances.
    """
    centers = theta[rng.choice(theta.shape[0], size, replace=False)]
    if jit.ENABLED:
        dist = _lloyd(np.ascontiguousarray(theta, dtype=float), centers, KMEANS_ITERS)
    else:
        dist = _lloyd_numpy(theta, centers)
    return dist.argmin(1), float(dist.min(1).sum())


def _lloyd_numpy(theta: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """`_lloyd` in numpy: the squared distances ``(n, size)`` to the final centers."""
    assign = None
    for _ in range(KMEANS_ITERS):
        dist = ((theta[:, None] - centers[None]) ** 2).sum(-1)
        if assign is not None and np.array_equal(dist.argmin(1), assign):
            break  # the same partition gives the same centers: later iterations change nothing
        assign = dist.argmin(1)
        for c in range(centers.shape[0]):
            if (assign == c).any():
                centers[c] = theta[assign == c].mean(0)
    return ((theta[:, None] - centers[None]) ** 2).sum(-1)


@jit.compiled()
def _lloyd(theta, centers, iters):  # pragma: no cover - compiled
    """Lloyd's iterations from ``centers (size, d)`` (updated in place), at most ``iters``,
    stopping when a partition repeats; returns the squared distances ``(n, size)`` to the
    final centers. Sums run in numpy's order for these shapes (over d in order; a cluster's
    members in order, then divided by their number), so the partition is numpy's."""
    n, d = theta.shape
    size = centers.shape[0]
    dist = np.empty((n, size))
    assign = np.full(n, -1)
    total = np.empty(d)
    for it in range(iters + 1):
        _sq_distances(theta, centers, dist)
        if it == iters:
            break
        changed = False
        for u in range(n):
            best = 0
            for c in range(1, size):
                if dist[u, c] < dist[u, best]:
                    best = c
            changed = changed or best != assign[u]
            assign[u] = best
        if not changed:
            break
        for c in range(size):
            count = 0
            total[:] = 0.0
            for u in range(n):
                if assign[u] == c:
                    count += 1
                    for i in range(d):
                        total[i] += theta[u, i]
            if count:
                for i in range(d):
                    centers[c, i] = total[i] / count
    return dist


@jit.compiled()
def _sq_distances(theta, centers, dist):  # pragma: no cover - compiled
    """``dist[u, c] = sum_i (theta[u, i] - centers[c, i])^2``, summed over i in order."""
    for u in range(theta.shape[0]):
        for c in range(centers.shape[0]):
            acc = 0.0
            for i in range(theta.shape[1]):
                diff = theta[u, i] - centers[c, i]
                acc += diff * diff
            dist[u, c] = acc


def kmeans_start(pop: Population, theta: np.ndarray, assign: np.ndarray) -> Population:
    """A copy of ``pop`` whose learned components are the clusters ``assign`` of ``theta``
    with at least two users (their means, their scatter plus `START_RIDGE`, their sizes as
    counts)."""
    d = theta.shape[1]
    start = copy.deepcopy(pop)
    mus, covs, counts = [pop.mu[0]], [pop.cov[0]], [0.0]
    for c in np.unique(assign):
        members = theta[assign == c]
        if len(members) < 2:
            continue
        mu, cov = start._project(members.mean(0), np.cov(members.T) + START_RIDGE * np.eye(d))
        mus.append(mu)
        covs.append(cov)
        counts.append(float(len(members)))
    start.mu, start.cov, start.counts = np.stack(mus), np.stack(covs), np.array(counts)
    start.born, start.grace = [0] * len(mus), 0
    return start


def restarted_population(
    pop: Population,
    lam: np.ndarray,
    h: np.ndarray,
    rng: np.random.Generator,
    restarts: int,
    iters: int = 20,
) -> Population | None:
    """The best mixture over the sizes in `SIZES` (sizes above ``pop.max_components`` tried
    at the cap), each started from the tightest of ``restarts`` k-means partitions and refined
    by ``iters`` EM iterations (`Population.fit`, deaths included), if its BIC beats ``pop``'s.

    Args:
        pop: The current population (not modified).
        lam, h: Summaries of every completed user ``(n, d, d)``, ``(n, d)``.
        rng: The policy's generator (the k-means starts).
        restarts: k-means partitions per size (the tightest is kept).
        iters: EM iterations per start.

    Returns:
        The new population (its components born at session 0, so no grace period keeps a
        weak one), or None when no start beats ``pop``.
    """
    theta = isotropic_means(lam, h, pop.prior_var)
    best, best_bic = None, bic(pop, lam, h)
    for size in sorted({min(size, pop.max_components) for size in SIZES}):
        if theta.shape[0] < 2 * size:
            continue
        # the tightest of the k-means partitions starts the EM (one EM fit per size)
        assign = min((kmeans(theta, size, rng) for _ in range(restarts)), key=lambda a: a[1])[0]
        start = kmeans_start(pop, theta, assign)
        start.fit(lam, h, iters)
        score = bic(start, lam, h)
        if score > best_bic:
            best, best_bic = start, score
    if best is not None:
        best.grace = pop.grace
    return best


def replace_population(
    pop: Population, lam: np.ndarray, h: np.ndarray, rng: np.random.Generator, restarts: int
) -> bool:
    """`restarted_population`, adopted in place of ``pop``'s components when it beats them.

    Returns:
        True when ``pop`` changed (an incremental EM state over it must then be rebuilt).
    """
    best = restarted_population(pop, lam, h, rng, restarts)
    if best is None:
        return False
    pop.mu, pop.cov, pop.counts = best.mu, best.cov, best.counts
    pop.born = [0] * best.mu.shape[0]
    return True
