"""Headroom references (``ref:oracle-prior``, ``ref:oracle-prior-lookahead``): the population-prior
learner reproduced by a plain loop, its leave-one-out prior, its posterior against Bayes' rule,
the lookahead against brute force and against greedy play in exact expectation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pb_toys import make_world
from prefduel.core import jit
from prefduel.core.btl import pairs_of, top_two
from prefduel.core.regret import pair_regret
from prefduel.runner import headroom
from prefduel.runner.headroom import (
    BETA,
    NO_OTHER_USERS,
    _round_likelihoods,
    _top_two_sums,
    lookahead_values,
    normalized,
    pair_likelihoods,
    play_oracle_prior,
    prior_log_weights,
)
from prefduel.runner.headroom_kernels import lookahead_kernel
from prefduel.runner.references import linear_oracle_theta, reference_rows, undefined_references


def test_the_online_prior_sees_only_earlier_arrivals_of_other_students():
    log_prior = prior_log_weights(np.array([0, 1, 2, 0, 1]), past_only=True)
    allowed = [[], [0], [0, 1], [1, 2], [0, 2, 3]]
    for n, seen in enumerate(allowed):
        assert sorted(np.flatnonzero(log_prior[n] == 0)) == seen, n
    world, theta = _world_and_theta(3, n=9, s=8)
    base = play_oracle_prior(world, theta, past_only=True)
    # a later arrival's theta, however extreme, cannot change what an earlier one was shown
    changed = theta.copy()
    changed[-1] = 0.0
    changed[-1, 0] = 50.0
    run = play_oracle_prior(world, changed, past_only=True)
    np.testing.assert_array_equal(run.first[:-1], base.first[:-1])
    np.testing.assert_array_equal(run.second[:-1], base.second[:-1])
    # while under the leave-one-out prior earlier arrivals do see it
    loo = play_oracle_prior(world, theta), play_oracle_prior(world, changed)
    assert (loo[0].first != loo[1].first).any() or (loo[0].second != loo[1].second).any()


def _sig(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _world_and_theta(seed: int = 0, **shape):
    world = make_world(seed, **shape)
    return world, linear_oracle_theta(world.Phi, world.U)


def _greedy_pair(mean: list[float]) -> tuple[int, int]:
    order = sorted(range(len(mean)), key=lambda k: (-mean[k], k))
    return order[0], order[1]


def _brute_value(util: np.ndarray, joint: np.ndarray, pair: tuple[int, int], t: int = 0) -> float:
    """Expected utility (times the branch probability) of ``pair`` at round ``t`` of ``util``
    ``(T, K, M)``, then greedy play, by recursion over both outcomes of every click."""
    mean = util[t] @ joint
    value = float(mean[pair[0]] + mean[pair[1]])
    if t == util.shape[0] - 1:
        return value
    lo, hi = min(pair), max(pair)
    lik = np.array([_sig(BETA * (util[t, lo, m] - util[t, hi, m])) for m in range(joint.size)])
    for branch in (joint * lik, joint * (1.0 - lik)):
        value += _brute_value(util, branch, _greedy_pair(list(util[t + 1] @ branch)), t + 1)
    return value


def _loop_replay(world, theta, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """The learner written as a plain loop over arrivals, rounds and particles."""
    first = np.zeros((world.N, world.S), dtype=int)
    second = np.zeros((world.N, world.S), dtype=int)
    pairs = [tuple(int(x) for x in p) for p in pairs_of(world.K)]
    for n in range(world.N):
        others = [m for m in range(world.N) if world.student_index[m] != world.student_index[n]]
        log_w = {m: 0.0 for m in others}
        for s in range(world.S):
            top = max(log_w.values())
            w = np.zeros(world.N)
            for m in others:
                w[m] = math.exp(log_w[m] - top)
            w /= w.sum()
            util = np.einsum("tkd,md->tkm", world.Phi[n, s : s + horizon], theta)
            if horizon == 1 or s == world.S - 1:
                i, j = _greedy_pair(list(util[0] @ w))
            else:
                i, j = max(pairs, key=lambda p: (_brute_value(util, w, p), -pairs.index(p)))
            y = world.click(n, s, i, j)
            for m in others:
                z = BETA * float(theta[m] @ (world.Phi[n, s, i] - world.Phi[n, s, j]))
                log_w[m] += math.log(_sig(z) if y else 1.0 - _sig(z))
            first[n, s], second[n, s] = i, j
    return first, second


@pytest.mark.parametrize("horizon", [1, 3])
def test_the_learner_reproduces_a_plain_loop(horizon):
    world, theta = _world_and_theta(3, n=7, s=5, k=4, d=5)
    run = play_oracle_prior(world, theta, horizon=horizon)
    first, second = _loop_replay(world, theta, horizon)
    np.testing.assert_array_equal(run.first, first)
    np.testing.assert_array_equal(run.second, second)


def test_with_two_users_each_follows_the_other_users_theta():
    # one particle: the posterior cannot move, so every pair is the other user's top two
    world, theta = _world_and_theta(1, n=2, s=6)
    rows = {r["policy"]: r for r in reference_rows(world)}
    expect = [np.argsort(-(world.Phi[n] @ theta[1 - n]), axis=-1, kind="stable") for n in (0, 1)]
    first = np.stack([e[:, 0] for e in expect])
    second = np.stack([e[:, 1] for e in expect])
    for name in ("ref:oracle-prior", "ref:oracle-prior-lookahead"):
        regret = pair_regret(world.U, first, second)
        assert rows[name]["R"] == pytest.approx(float(regret.sum()), rel=1e-12)
        floor = np.sort(world.U, -1)[..., -1] - np.sort(world.U, -1)[..., -2]
        np.testing.assert_allclose(
            rows[name]["excess_per_arrival"], (regret - floor).sum(axis=1), atol=1e-8
        )


def test_leave_one_out_excludes_the_arrival_and_its_student():
    log_prior = prior_log_weights(np.array([0, 1, 2, 0, 1]))
    assert np.isneginf(log_prior[0, [0, 3]]).all() and (log_prior[0, [1, 2, 4]] == 0).all()
    assert np.isneginf(np.diag(log_prior)).all()
    world, theta = _world_and_theta(2, n=9, s=8)
    base = play_oracle_prior(world, theta, horizon=2)
    assert np.isneginf(np.diag(base.log_weights)).all()
    # arrival 0's own theta (and that of arrivals 4 and 8, the same student) cannot matter to
    # it, however extreme; another student's theta does
    for n in (0, 4, 8):
        changed = theta.copy()
        changed[[0, 4, 8]] = 0.0
        changed[[0, 4, 8], n % world.K] = 50.0
        run = play_oracle_prior(world, changed, horizon=2)
        np.testing.assert_array_equal(run.first[n], base.first[n])
        np.testing.assert_array_equal(run.second[n], base.second[n])
    changed = theta.copy()
    changed[1] = 0.0
    changed[1, 0] = 50.0
    run = play_oracle_prior(world, changed, horizon=2)
    assert (run.first[0] != base.first[0]).any() or (run.second[0] != base.second[0]).any()


def test_the_particle_posterior_is_bayes_rule_on_the_worlds_clicks():
    world, theta = _world_and_theta(4, n=10, s=12)
    run = play_oracle_prior(world, theta)
    for n in range(world.N):
        for s in range(world.S):
            assert run.first_won[n, s] == world.click(n, s, run.first[n, s], run.second[n, s])
    dphi = (
        world.Phi[np.arange(world.N)[:, None], np.arange(world.S), run.first]
        - world.Phi[np.arange(world.N)[:, None], np.arange(world.S), run.second]
    )  # (N, S, d)
    p_first = 1.0 / (1.0 + np.exp(-BETA * np.einsum("nsd,md->nms", dphi, theta)))
    lik = np.where(run.first_won[:, None, :], p_first, 1.0 - p_first).prod(axis=2)  # (N, M)
    prior = (world.student_index[:, None] != world.student_index[None, :]).astype(float)
    posterior = prior * lik / (prior * lik).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(normalized(run.log_weights), posterior, rtol=1e-9, atol=1e-15)


def test_the_click_rule_one_at_a_time_and_for_all_arrivals_at_once():
    """`World.clicks` (the rows' clicks) and `World.click` (the policies') are the rule as
    written: the lower index wins when u < P[lo, hi], flipped when it was shown second."""
    world = make_world(5)
    rng = np.random.default_rng(0)
    for s in range(world.S):
        first = rng.integers(0, world.K, world.N)
        second = (first + rng.integers(1, world.K, world.N)) % world.K
        want = []
        for n in range(world.N):
            lo, hi = sorted((int(first[n]), int(second[n])))
            lo_won = world.u[n, s] < world.P[n, s, lo, hi]
            want.append(lo_won if first[n] == lo else not lo_won)
        got = world.clicks(np.arange(world.N), s, first, second)
        assert got.dtype == bool and got.tolist() == want
        one = [world.click(n, s, int(first[n]), int(second[n])) for n in range(world.N)]
        assert one == [int(y) for y in want] and {type(y) for y in one} == {int}
        swapped = world.clicks(np.arange(world.N), s, second, first)
        np.testing.assert_array_equal(swapped, ~got)  # (j, i) gets the same click as (i, j)


def _util(phi: np.ndarray, theta: np.ndarray) -> np.ndarray:
    return np.einsum("tkd,md->tkm", phi, theta)


def _pm(util: np.ndarray) -> np.ndarray:
    """``(T, K, M)`` utilities as the ``(1, T, M, K)`` batch `lookahead_values` reads."""
    return np.swapaxes(util, 1, 2)[None]


def _lik(phi: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """`pair_likelihoods` of one arrival's rounds, checked against the definition."""
    lik = pair_likelihoods(phi[None], theta)
    util = _util(phi, theta)
    for p, (a, b) in enumerate(pairs_of(phi.shape[-2])):
        np.testing.assert_allclose(
            lik[0, :, p], 1.0 / (1.0 + np.exp(-BETA * (util[:, a] - util[:, b]))), rtol=1e-12
        )
    return lik


def test_lookahead_values_are_the_brute_force_expectation():
    world, theta = _world_and_theta(6, n=8, s=4, k=5, d=6)
    w = normalized(prior_log_weights(world.student_index))
    w[0] *= np.linspace(0.2, 2.0, world.N)
    w[0] /= w[0].sum()
    util = _util(world.Phi[0], theta)
    values = lookahead_values(_pm(util), _lik(world.Phi[0, :-1], theta), w[:1])[0]
    brute = [_brute_value(util, w[0], tuple(int(x) for x in p)) for p in pairs_of(world.K)]
    np.testing.assert_allclose(values, brute, rtol=1e-12)
    # one round: the value is the posterior mean utility of the pair, so the best is greedy
    one = lookahead_values(_pm(util[:1]), _lik(world.Phi[0, :0], theta), w[:1])[0]
    best = pairs_of(world.K)[np.argmax(one)]
    assert tuple(best) == tuple(sorted(top_two(util[0] @ w[0])))


def _expected_regret(util: np.ndarray, joint: np.ndarray, rule, t: int = 0) -> float:
    """Exact expected regret (times the branch probability) from round ``t`` to the end when
    the true theta is drawn from the belief and clicks follow the model, pairs by ``rule``."""
    i, j = rule(util[t:], joint / joint.sum())
    regret = 2 * util[t].max(axis=0) - util[t, i] - util[t, j]  # per particle
    total = float(joint @ regret)
    if t < util.shape[0] - 1:
        lo, hi = min(i, j), max(i, j)
        lik = 1.0 / (1.0 + np.exp(-BETA * (util[t, lo] - util[t, hi])))
        for branch in (joint * lik, joint * (1.0 - lik)):
            total += _expected_regret(util, branch, rule, t + 1)
    return total


def _greedy_rule(util, w):
    return top_two(util[0] @ w)


def _lookahead_rule(phi, theta):
    def rule(util, w):
        rounds = util.shape[0]
        lik = pair_likelihoods(phi[None, -rounds:-1], theta)
        values = lookahead_values(_pm(util), lik, w[None])[0]
        return tuple(pairs_of(util.shape[1])[int(np.argmax(values))])

    return rule


def test_the_lookahead_is_never_worse_than_greedy_in_exact_expectation():
    # a horizon that reaches the end of the session makes the lookahead a policy improvement
    # of greedy play: its expected regret under the prior is never higher, for every arrival
    gains = []
    for seed in range(4):
        world, theta = _world_and_theta(seed, n=8, s=4, k=5, d=6)
        prior = normalized(prior_log_weights(world.student_index))
        for n in range(world.N):
            util = _util(world.Phi[n], theta)
            greedy = _expected_regret(util, prior[n], _greedy_rule)
            ahead = _expected_regret(util, prior[n], _lookahead_rule(world.Phi[n], theta))
            assert ahead <= greedy + 1e-12, (seed, n)
            gains.append(greedy - ahead)
    assert max(gains) > 1e-4  # and on some arrivals it is strictly better


def test_results_are_deterministic_and_do_not_depend_on_the_chunk():
    world, theta = _world_and_theta(7, n=11, s=6)
    runs = [play_oracle_prior(world, theta, horizon=3, chunk=c) for c in (1, 4, 32)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.first, runs[0].first)
        np.testing.assert_array_equal(run.second, runs[0].second)
        np.testing.assert_array_equal(run.log_weights, runs[0].log_weights)
    assert reference_rows(world) == reference_rows(world)


def test_a_world_of_one_student_leaves_the_prior_rows_undefined():
    world = make_world(0)
    world.student_index[:] = 2  # every arrival is the same student: nobody else to learn from
    undefined = undefined_references(world)
    assert undefined == {
        "ref:oracle-prior": NO_OTHER_USERS,
        "ref:oracle-prior-lookahead": NO_OTHER_USERS,
    }
    rows = {r["policy"]: r for r in reference_rows(world)}
    assert rows["ref:oracle-prior"]["undefined"] == NO_OTHER_USERS
    assert "undefined" not in rows["ref:oracle-user"]


def test_the_lookahead_rows_likelihoods_and_best_pairs_are_those_of_the_plain_functions():
    """The lookahead row's own layout of the click likelihoods, its logistic in place and its
    top two by argmax give the values and pairs of `pair_likelihoods` and `top_two` to the bit
    (ties to the lower index included)."""
    world, theta = _world_and_theta(2, n=6, s=5)
    plain = pair_likelihoods(world.Phi, theta)
    np.testing.assert_array_equal(_round_likelihoods(world.Phi, theta, BETA), plain[:, :-1])
    scores = np.random.default_rng(0).normal(size=(4, 30, 6)).round(1)  # many exact ties
    scores[0, 0] = 0.5
    best, second, total = _top_two_sums(scores)
    plain_best, plain_second = top_two(scores)
    np.testing.assert_array_equal(best, plain_best)
    np.testing.assert_array_equal(second, plain_second)
    rows = np.indices(best.shape)
    np.testing.assert_array_equal(total, scores[(*rows, best)] + scores[(*rows, plain_second)])


@pytest.mark.parametrize("horizon", [1, 3])
def test_the_arrivals_played_together_do_not_change_the_rows(horizon, monkeypatch):
    world, theta = _world_and_theta(4, n=12, s=6)
    monkeypatch.setattr(headroom, "GREEDY_CHUNK", 1000)
    whole = play_oracle_prior(world, theta, horizon=horizon, chunk=1000)
    monkeypatch.setattr(headroom, "GREEDY_CHUNK", 5)
    chunked = play_oracle_prior(world, theta, horizon=horizon, chunk=5)
    for field in ("first", "second", "first_won", "log_weights"):
        np.testing.assert_array_equal(getattr(chunked, field), getattr(whole, field))


@pytest.mark.parametrize("rounds", [1, 2, 4, 5])
def test_the_compiled_lookahead_gives_the_values_of_the_numpy_one(rounds):
    """The depth-first compiled walk values every pair as `lookahead_values` does (to rounding:
    its sums over particles are ordered otherwise), from every round of a batch."""
    world, theta = _world_and_theta(5, n=9, s=7, k=5, d=6)
    rng = np.random.default_rng(1)
    weights = normalized(rng.normal(size=(3, world.N)))
    util = np.einsum("nskd,md->nsmk", world.Phi[:3], theta)
    lo_wins = pair_likelihoods(world.Phi[:3, :-1], theta)
    pairs = pairs_of(world.K)
    pair_id = np.zeros((world.K, world.K), dtype=np.int64)
    pair_id[pairs[:, 0], pairs[:, 1]] = pair_id[pairs[:, 1], pairs[:, 0]] = np.arange(len(pairs))
    util_t = np.ascontiguousarray(np.swapaxes(util, -1, -2))
    for first in range(world.S - rounds + 1):
        end = first + rounds
        want = lookahead_values(util[:, first:end], lo_wins[:, first : end - 1], weights)
        got = lookahead_kernel(util_t, lo_wins, weights, first, end, pairs, pair_id)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", [8, 9])
def test_the_compiled_and_numpy_lookahead_rows_show_the_same_pairs(seed, monkeypatch):
    """Both paths of the lookahead row show the same pairs and clicks, so the same posterior.
    (Where two pairs' values are equal in exact arithmetic, e.g. two personas with the same
    features, each path breaks the tie by its own rounding.)"""
    world, theta = _world_and_theta(seed, n=10, s=6, k=5, d=6)
    monkeypatch.setattr(jit, "ENABLED", False)
    plain = play_oracle_prior(world, theta, horizon=4)
    monkeypatch.setattr(jit, "ENABLED", True)
    fast = play_oracle_prior(world, theta, horizon=4)
    for field in ("first", "second", "first_won"):
        np.testing.assert_array_equal(getattr(fast, field), getattr(plain, field))
    np.testing.assert_allclose(fast.log_weights, plain.log_weights, rtol=0, atol=0)
