"""Compiled lookahead of the population-prior reference (optional: used when numba is installed).

`prefduel.runner.headroom.lookahead_values` enumerates every click branch of the lookahead
breadth-first in numpy: a round of all branches is one batched product of the branch weights
with the particles' utilities, and the arrays of the deepest round (120 branches x the
particles, for 4 arrivals) are megabytes. Here each arrival's branches are walked depth-first:
a branch's weights are one row of particles, kept in cache, and each node is visited once.
The arithmetic is the same (the branch weights to the bit; the sums over particles in another
order), so the values agree to rounding and the chosen pairs are the same (checked on every
seed of the unlocked and evaluation rosters; ``tests/runner/test_headroom.py``).

The switch is `prefduel.core.jit.ENABLED`, as for every compiled kernel.
"""

from __future__ import annotations

import numpy as np

from prefduel.core.jit import compiled

# sums over particles may be reordered (and vectorized); no assumption about infinities or NaN
_FAST = {"reassoc", "contract", "nsz", "arcp"}


@compiled()
def lookahead_kernel(util_t, lo_wins, weights, first, end, pairs, pair_id):  # pragma: no cover
    """`prefduel.runner.headroom.lookahead_values` of rounds ``first:end`` (the current round
    and the ``T - 1`` rounds valued after it) by a depth-first walk of the branches.

    Args:
        util_t: ``(n, S, K, M)`` utilities, particles innermost (C-contiguous, so that the
            sums over particles vectorize).
        lo_wins: ``(n, S - 1, P, M)`` chance that the lower-indexed persona of each pair wins
            (C-contiguous).
        weights: ``(n, M)`` posterior weights (rows sum to 1).
        first: The current round.
        end: One past the last round valued.
        pairs: ``(P, 2)`` the pairs (`prefduel.core.btl.pairs_of` order).
        pair_id: ``(K, K)`` the index of each pair in ``pairs``, both orders.

    Returns:
        ``(n, P)`` values, as `lookahead_values` returns them.
    """
    n, _, k, m = util_t.shape
    rounds = end - first
    n_pairs = pairs.shape[0]
    levels = rounds - 1
    values = np.zeros((n, n_pairs))
    joint = np.empty((rounds, m))
    shown = np.zeros(rounds, dtype=np.int64)
    root = np.empty(k)
    mean = np.empty(k)
    for a in range(n):
        _weighted_means(weights[a], util_t[a, first], root)
        joint[0] = weights[a]
        for p in range(n_pairs):
            total = root[pairs[p, 0]] + root[pairs[p, 1]]
            shown[0] = p
            for leaf in range(1 << levels):
                start = 1 if leaf == 0 else levels - _highest_bit(leaf ^ (leaf - 1))
                for t in range(start, levels + 1):
                    lost = (leaf >> (levels - t)) & 1
                    lo_win = lo_wins[a, first + t - 1, shown[t - 1]]
                    _branch_weights(joint[t - 1], lo_win, lost, joint[t])
                    _weighted_means(joint[t], util_t[a, first + t], mean)
                    best, second = _top_two(mean)
                    total += mean[best] + mean[second]
                    shown[t] = pair_id[best, second]
            values[a, p] = total
    return values


@compiled(inline="always")
def _highest_bit(x):  # pragma: no cover - compiled
    """The position of the highest set bit of ``x > 0`` (0 for 1)."""
    position = 0
    while x > 1:
        x >>= 1
        position += 1
    return position


@compiled(inline="always")
def _branch_weights(parent, lo_win, lost, out):  # pragma: no cover - compiled
    """A child branch's unnormalized weights: ``parent * lo_win`` when the lower index won,
    ``parent - parent * lo_win`` when it lost (the operations of `lookahead_values`, so the
    weights are the same to the bit: no contraction into a fused multiply-add here)."""
    for j in range(parent.shape[0]):
        won = parent[j] * lo_win[j]
        out[j] = parent[j] - won if lost else won


@compiled(fastmath=_FAST)
def _weighted_means(joint, util, out):  # pragma: no cover - compiled
    """``out[k] = sum_m joint[m] util[k, m]`` (unnormalized branch means)."""
    for e in range(util.shape[0]):
        acc = 0.0
        for j in range(joint.shape[0]):
            acc += joint[j] * util[e, j]
        out[e] = acc


@compiled(inline="always")
def _top_two(scores):  # pragma: no cover - compiled
    """The best and second-best index of ``scores``, ties to the lower index (`top_two`)."""
    best = 0
    for e in range(1, scores.shape[0]):
        if scores[e] > scores[best]:
            best = e
    second = 1 if best == 0 else 0
    for e in range(scores.shape[0]):
        if e != best and scores[e] > scores[second]:
            second = e
    return best, second


@compiled()
def particle_utilities(phi, theta, scale):  # pragma: no cover - compiled
    """``einsum("nskd,md->nsmk", phi, theta) * scale``: each particle's utility of each
    persona, ``(n, S, M, K)`` from ``phi (n, S, K, d)`` and ``theta (M, d)``.

    Each entry sums its ``d`` products in order from the first, as numpy's ``einsum`` does for
    this contraction, and is then scaled, so the values are the same to the bit (checked in
    ``tests/runner/test_headroom_ask.py``); the loops skip ``einsum``'s iterator setup, which
    costs more than the arithmetic on these shapes.
    """
    n, s_all, k, d = phi.shape
    m_all = theta.shape[0]
    out = np.empty((n, s_all, m_all, k))
    for a in range(n):
        for s in range(s_all):
            for m in range(m_all):
                for e in range(k):
                    acc = 0.0
                    for i in range(d):
                        acc += phi[a, s, e, i] * theta[m, i]
                    out[a, s, m, e] = acc * scale
    return out
