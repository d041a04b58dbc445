"""Headroom references: a Bayesian learner that knows the population.

Both rows replay every arrival of a world with a learner whose prior is the *population*: the
hindsight per-user weights ``theta_m`` of `ref:oracle-user` (least squares of ``U`` on the
features) of every other user of the same world, each with equal weight (leave-one-out: an
arrival never sees its own ``theta``, nor that of another session of the same student). The
particles are updated by Bayes' rule from the arrival's clicks, drawn by the world's click rule
(`prefduel.worlds.world.World.clicks`, the same common random numbers as the policies) under the
click likelihood the policies assume, ``P(first wins) = sigmoid(beta theta . (phi_i - phi_j))``
with ``beta`` the policies' logits per unit of utility (`prefduel.policies.base.CLICK_BETA`).
For a prior that is a finite set of particles the weighted particles are the exact posterior.

* ``ref:oracle-prior`` shows the two personas of highest posterior expected utility (greedy).
* ``ref:oracle-prior-lookahead`` chooses each pair by an exact ``horizon``-round lookahead: for
  each of the 15 pairs, the expected utility of showing it now and then playing greedily with
  learning for the next ``horizon - 1`` rounds, every click outcome enumerated (``2^(horizon-1)``
  branches) on the features of the arrival's own upcoming questions (known in hindsight; their
  utilities are not used). When the horizon reaches the end of the session this is a one-step policy
  improvement of greedy play, so its expected regret under the prior is never above greedy's.

The expected regret of any pair rule under the belief is ``E[sum_t 2 max_k u_tk]`` (the same
for every rule) minus the sum of the posterior mean utilities of the shown personas, so the
lookahead only needs posterior means, and it never normalizes a branch: the best two of the
unnormalized mean ``sum_m joint_m u_m`` are the best two of the branch's posterior mean, and
their sum is the branch's value times its probability.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_expit

from prefduel.core import jit
from prefduel.core.btl import pairs_of, sigmoid, top_two
from prefduel.policies.base import CLICK_BETA
from prefduel.runner.headroom_kernels import lookahead_kernel
from prefduel.worlds.world import World

#: Logits per unit of utility in the click likelihood (the value policies receive).
BETA = CLICK_BETA
#: Rounds the lookahead row looks ahead (the pair now and greedy play after it), chosen on
#: ``dev`` (docs/coduel.md, headroom).
HORIZON = 4
#: Arrivals processed together by the lookahead: small batches keep its branch arrays in cache
#: (4 was the fastest of 1-32 on the 350-arrival rosters, 10% faster than 8, on this 2-core
#: machine; the result does not depend on it).
CHUNK = 4
#: Arrivals processed together by greedy play: their utilities are some MB, which the allocator
#: reuses, where a whole world's are fresh memory each time (141 MB on 350 arrivals; measured on
#: 2 shared cores: 0.12 s for 32 at a time against 0.15-0.4 s at once). Same result.
GREEDY_CHUNK = 32


@dataclass
class PriorRun:
    """What the population-prior learner did: shown pairs, clicks and the final posterior.

    Attributes:
        first: ``(N, S)`` first shown persona.
        second: ``(N, S)`` second shown persona.
        first_won: ``(N, S)`` the click (True when ``first`` won).
        log_weights: ``(N, M)`` unnormalized log posterior over the particles after the last
            round (``-inf`` for the particles excluded from an arrival's prior).
    """

    first: np.ndarray
    second: np.ndarray
    first_won: np.ndarray
    log_weights: np.ndarray


def prior_log_weights(student_index: np.ndarray, past_only: bool = False) -> np.ndarray:
    """Leave-one-out log prior ``(N, N)``: 0 for the other students' particles, ``-inf`` for
    the arrival's own (and for any other arrival of the same student).

    With ``past_only`` the particles of later arrivals are ``-inf`` too: the prior of arrival
    ``n`` is what an online learner could at best know, the exact weights of arrivals before it.
    The first arrival then has no particle (its weights are all 0: it is shown the first pair).
    """
    index = np.asarray(student_index)
    excluded = index[:, None] == index[None, :]
    if past_only:
        excluded |= np.triu(np.ones(excluded.shape, dtype=bool))
    return np.where(excluded, -np.inf, 0.0)


def normalized(log_weights: np.ndarray) -> np.ndarray:
    """Weights summing to 1 per row from log weights (a row that is all ``-inf`` gives 0s)."""
    top = log_weights.max(axis=-1, keepdims=True)
    w = np.exp(log_weights - np.where(np.isfinite(top), top, 0.0))
    total = w.sum(axis=-1, keepdims=True)
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


def log_click_likelihood(logit: np.ndarray, first_won: np.ndarray) -> np.ndarray:
    """``log sigmoid(logit)`` where the first won, ``log sigmoid(-logit)`` where it lost."""
    return log_expit(np.where(first_won, logit, -logit))


def pair_likelihoods(phi: np.ndarray, theta: np.ndarray, beta: float = BETA) -> np.ndarray:
    """``(..., P, M)`` chance that the lower-indexed persona of each pair (`pairs_of` order)
    wins, under each particle ``theta (M, d)``, from features ``phi (..., K, d)``."""
    pairs = pairs_of(phi.shape[-2])
    logit = (beta * (phi[..., pairs[:, 0], :] - phi[..., pairs[:, 1], :])) @ theta.T
    return sigmoid(logit)


def lookahead_values(
    util: np.ndarray,
    lo_wins: np.ndarray,
    weights: np.ndarray,
    workspace: list[np.ndarray] | None = None,
) -> np.ndarray:
    """Expected utility of each pair shown now followed by greedy play, exactly.

    Args:
        util: ``(n, T, M, K)`` utility of each persona under each particle in the current round
            and the ``T - 1`` rounds valued after it.
        lo_wins: ``(n, T - 1, P, M)`` `pair_likelihoods` of those rounds but the last.
        weights: ``(n, M)`` posterior weights (rows sum to 1).
        workspace: Reusable buffers (a list this function fills; pass the same list to later
            calls to save the page faults of fresh large arrays). Values do not depend on it.

    Returns:
        ``(n, P)`` values in `pairs_of` order: the expected sum over the ``T`` rounds of the
        utilities of both shown personas when pair ``p`` is shown now and, after each click,
        the two of highest posterior mean.
    """
    n, rounds, m, k = util.shape
    pairs = pairs_of(k)
    n_pairs = len(pairs)
    pair_id = np.zeros((k, k), dtype=np.int64)
    pair_id[pairs[:, 0], pairs[:, 1]] = pair_id[pairs[:, 1], pairs[:, 0]] = np.arange(n_pairs)
    mean = np.einsum("nm,nmk->nk", weights, util[:, 0])
    values = mean[:, pairs[:, 0]] + mean[:, pairs[:, 1]]
    buffers = _buffers(workspace, n * n_pairs * 2 ** max(0, rounds - 1) * m)
    offsets = (np.arange(n) * n_pairs)[:, None]
    # joint (n, B, M): the prior weight times the likelihood of a branch's clicks; branch b
    # starts with pair b % P, and each round doubles B (the lower index wins, then loses)
    shown = np.broadcast_to(np.arange(n_pairs), (n, n_pairs))
    joint = np.broadcast_to(weights[:, None, :], (n, n_pairs, m))
    for t in range(1, rounds):
        b = joint.shape[1]
        if t == 1:  # branch b shows pair b: no gather
            lik = lo_wins[:, 0]
        else:
            lik = buffers[0][: n * b * m].reshape(n * b, m)
            rows = (offsets + shown).ravel()  # valid: "clip" only spares take a buffered copy
            np.take(lo_wins[:, t - 1].reshape(n * n_pairs, m), rows, 0, lik, mode="clip")
            lik = lik.reshape(n, b, m)
        out = buffers[1 + t % 2][: n * 2 * b * m].reshape(n, 2 * b, m)
        np.multiply(joint, lik, out=out[:, :b])
        np.subtract(joint, out[:, :b], out=out[:, b:])
        joint = out
        branch_mean = joint @ util[:, t]  # (n, B, K), unnormalized
        best, second, gain = _top_two_sums(branch_mean)
        values = values + gain.reshape(n, -1, n_pairs).sum(axis=1)
        shown = pair_id[best, second]
    return values


def _top_two_sums(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`prefduel.core.btl.top_two` of ``scores (..., K)`` (ties to the lower index) and the sum
    of the two scores, by two ``argmax`` instead of a sort (the same pairs and sums)."""
    flat = scores.reshape(-1, scores.shape[-1])
    rows = np.arange(flat.shape[0])
    best = flat.argmax(axis=1)  # the first of equal maxima, as the stable sort puts it first
    top = flat[rows, best]
    rest = flat.copy()
    rest[rows, best] = -np.inf
    second = rest.argmax(axis=1)
    shape = scores.shape[:-1]
    return best.reshape(shape), second.reshape(shape), (top + flat[rows, second]).reshape(shape)


def _buffers(workspace: list[np.ndarray] | None, size: int) -> list[np.ndarray]:
    """Three flat float buffers of at least ``size`` entries, kept in ``workspace``."""
    if workspace is None:
        workspace = []
    if not workspace or workspace[0].size < size:
        workspace[:] = [np.empty(size) for _ in range(3)]
    return workspace


def play_oracle_prior(
    world: World,
    theta: np.ndarray,
    *,
    horizon: int = 1,
    beta: float = BETA,
    chunk: int = CHUNK,
    past_only: bool = False,
    log_weights: np.ndarray | None = None,
) -> PriorRun:
    """Replay ``world`` with the leave-one-out population-prior learner.

    Arrivals are independent given the particles, so they are replayed ``chunk`` at a time.

    Args:
        world: The world (its clicks come from `World.clicks`, the click rule).
        theta: ``(N, d)`` hindsight weights of the world's arrivals (the particles), or
            ``(N, N, d)``: for each arrival its own copy of them (the recalibration-aware rows
            of `prefduel.runner.headroom_recal`, where each arrival sees other features).
        horizon: 1 for greedy pairs, more for the exact lookahead of `lookahead_values`.
        beta: Logits per unit of utility of the click likelihood.
        chunk: Arrivals per lookahead batch (memory only; the result does not depend on it;
            greedy play takes `GREEDY_CHUNK` at a time).
        past_only: Particles of earlier arrivals only (`prior_log_weights`): the online
            variant, not a leaderboard row (``benchmarks/headroom.py --past-only``).
        log_weights: ``(N, M)`` the arrivals' log prior over the particles, in place of
            `prior_log_weights` (e.g. after answers to preference questions); not modified.

    Returns:
        The shown pairs, the clicks and the final log posterior (`PriorRun`).
    """
    n, s_all = world.N, world.S
    run = PriorRun(
        first=np.empty((n, s_all), dtype=np.int64),
        second=np.empty((n, s_all), dtype=np.int64),
        first_won=np.empty((n, s_all), dtype=bool),
        log_weights=(
            prior_log_weights(world.student_index, past_only)
            if log_weights is None
            else np.array(log_weights, dtype=float)
        ),
    )
    step = GREEDY_CHUNK if horizon <= 1 else max(1, chunk)
    for lo in range(0, n, step):
        _play_arrivals(world, np.arange(lo, min(n, lo + step)), theta, horizon, beta, run)
    return run


def _play_arrivals(
    world: World,
    arrivals: np.ndarray,
    theta: np.ndarray,
    horizon: int,
    beta: float,
    run: PriorRun,
) -> None:
    """Play every round of ``arrivals``, writing their rows of ``run`` in place."""
    pairs = pairs_of(world.K)
    if theta.ndim == 2:  # one set of particles for every arrival
        util = theta @ np.swapaxes(world.Phi[arrivals], -1, -2)  # (n, S, M, K)
        lo_wins = _round_likelihoods(world.Phi[arrivals], theta, beta) if horizon > 1 else None
    else:  # each arrival's own particles
        util, lo_wins = _own_particles(world.Phi[arrivals], theta[arrivals], beta, horizon)
    log_w = run.log_weights[arrivals]
    rows = np.arange(arrivals.size)
    lookahead = None if lo_wins is None else _Lookahead.of(util, lo_wins, pairs)
    for s in range(world.S):
        weights = normalized(log_w)
        if lookahead is None or s == world.S - 1:
            i, j = top_two(np.einsum("nm,nmk->nk", weights, util[:, s]))
        else:
            values = lookahead.values(s, min(world.S, s + horizon), weights)
            best = np.argmax(values, axis=1)
            i, j = pairs[best, 0], pairs[best, 1]
        won = world.clicks(arrivals, s, i, j)
        run.first[arrivals, s], run.second[arrivals, s], run.first_won[arrivals, s] = i, j, won
        logit = beta * (util[rows, s, :, i] - util[rows, s, :, j])  # (n, M)
        log_w = log_w + log_click_likelihood(logit, won[:, None])
    run.log_weights[arrivals] = log_w


@dataclass
class _Lookahead:
    """The lookahead of one batch of arrivals: `lookahead_values` in numpy, or the compiled
    depth-first walk (`prefduel.runner.headroom_kernels.lookahead_kernel`) when
    `prefduel.core.jit.ENABLED`, which reads the utilities transposed (``util_t (n, S, K, M)``,
    each persona's particles contiguous) and the likelihoods contiguous."""

    util: np.ndarray
    lo_wins: np.ndarray
    pairs: np.ndarray
    util_t: np.ndarray | None = None
    pair_id: np.ndarray | None = None
    workspace: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def of(cls, util: np.ndarray, lo_wins: np.ndarray, pairs: np.ndarray) -> _Lookahead:
        """The batch's lookahead from ``util (n, S, M, K)`` and ``lo_wins (n, S - 1, P, M)``."""
        if not jit.ENABLED:
            return cls(util, lo_wins, pairs)
        k = util.shape[-1]
        pair_id = np.zeros((k, k), dtype=np.int64)
        pair_id[pairs[:, 0], pairs[:, 1]] = np.arange(len(pairs))
        pair_id[pairs[:, 1], pairs[:, 0]] = np.arange(len(pairs))
        util_t = np.ascontiguousarray(np.swapaxes(util, -1, -2))
        return cls(util, np.ascontiguousarray(lo_wins), pairs, util_t, pair_id)

    def values(self, s: int, end: int, weights: np.ndarray) -> np.ndarray:
        """``(n, P)`` values of the pairs in round ``s``, rounds ``s:end`` valued."""
        if self.util_t is None:
            util, lo_wins = self.util[:, s:end], self.lo_wins[:, s : end - 1]
            return lookahead_values(util, lo_wins, weights, self.workspace)
        pairs, pair_id = self.pairs, self.pair_id
        return lookahead_kernel(self.util_t, self.lo_wins, weights, s, end, pairs, pair_id)


def _round_likelihoods(phi: np.ndarray, theta: np.ndarray, beta: float) -> np.ndarray:
    """`pair_likelihoods` ``(n, S - 1, P, M)`` of the rounds the lookahead reads (all but the
    last), the same values: stored round by round, so that one round of all arrivals is one
    block `lookahead_values` gathers from without a copy, and the logistic is computed in place
    (three arrays of fresh memory instead of seven)."""
    pairs = pairs_of(phi.shape[-2])
    rounds = np.swapaxes(phi[:, :-1], 0, 1)  # (S - 1, n, K, d)
    logit = (beta * (rounds[..., pairs[:, 0], :] - rounds[..., pairs[:, 1], :])) @ theta.T
    _sigmoid_in_place(logit)
    return np.swapaxes(logit, 0, 1)


def _sigmoid_in_place(x: np.ndarray) -> None:
    """`prefduel.core.btl.sigmoid` of ``x`` written over ``x``, by the same operations:
    ``where(x >= 0, 1, e) / (1 + e)`` with ``e = exp(-|x|)``."""
    e = np.abs(x)
    np.negative(e, out=e)
    np.exp(e, out=e)
    numerator = np.where(x >= 0, 1.0, e)
    np.add(e, 1.0, out=e)
    np.divide(numerator, e, out=x)


def _own_particles(
    phi: np.ndarray, theta: np.ndarray, beta: float, horizon: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """`_play_arrivals`' utilities ``(n, S, M, K)`` and pair likelihoods ``(n, S, P, M)``
    (None for greedy play) when each arrival has its own particles ``theta (n, M, d)``."""
    particles = np.swapaxes(theta, -1, -2)[:, None]  # (n, 1, d, M)
    util = np.swapaxes(phi @ particles, -1, -2)  # (n, S, M, K)
    if horizon <= 1:
        return util, None
    pairs = pairs_of(phi.shape[-2])
    z = beta * (phi[..., pairs[:, 0], :] - phi[..., pairs[:, 1], :])  # (n, S, P, d)
    return util, sigmoid(z @ particles)


#: Why the population-prior references are undefined on a world of one student.
NO_OTHER_USERS = (
    "some arrival has no other student in its world, so its leave-one-out prior is empty"
)


def lonely_arrivals(world: World) -> bool:
    """True when some arrival's leave-one-out prior holds no particle."""
    return bool(np.isneginf(prior_log_weights(world.student_index)).all(axis=1).any())
