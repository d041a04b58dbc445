"""CODuel's population restarts: mixtures refitted from k-means starts and kept by BIC, on the
schedule that keeps their cost per session flat, and the policy settings that switch them on."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tests.policies.coduel.test_coduel_split import D, K, Q, U, _merged, _users

import prefduel.policies.coduel.policy as module
from prefduel.core import jit
from prefduel.policies import check_policy, load_policy
from prefduel.policies.coduel import restarts
from prefduel.policies.coduel.population import Population
from prefduel.runner.cell import play, policy_rng
from prefduel.worlds import parse_world


def _three_centers():
    a = Q @ np.r_[2.5, -2.5, 1.0, -1.0, 0.0, 0.0, 0.5]
    b = Q @ np.r_[-2.0, 0.0, 2.5, 0.0, -2.0, 0.0, -0.5]
    return a, b, -a


def test_a_merged_population_is_replaced_by_one_component_per_group():
    rng = np.random.default_rng(0)
    centers = _three_centers()
    lam, h = _users(rng, centers, 30)
    pop = _merged(lam, h)
    before = restarts.bic(pop, lam, h)
    assert restarts.replace_population(pop, lam, h, np.random.default_rng(1), restarts=2)
    assert restarts.bic(pop, lam, h) > before
    assert pop.n_learned >= 3
    for center in centers:  # a learned component on each group
        assert min(np.linalg.norm(mu - center) for mu in pop.mu[1:]) < 0.6
    assert abs(pop.counts.sum() - 90.0) < 1e-6
    np.testing.assert_array_equal(pop.mu[0], np.zeros(D))  # the isotropic component stays
    for mu, cov in zip(pop.mu, pop.cov, strict=True):  # the u direction stays isotropic
        assert abs(mu @ U) < 1e-12
        np.testing.assert_allclose(cov @ U, U, atol=1e-12)


def test_a_population_that_fits_one_group_is_kept():
    rng = np.random.default_rng(2)
    a, _, _ = _three_centers()
    lam, h = _users(rng, [a], 60)
    pop = _merged(lam, h)
    mu, cov = pop.mu.copy(), pop.cov.copy()
    assert restarts.restarted_population(pop, lam, h, np.random.default_rng(3), 2) is None
    assert not restarts.replace_population(pop, lam, h, np.random.default_rng(3), 2)
    np.testing.assert_array_equal(pop.mu, mu)
    np.testing.assert_array_equal(pop.cov, cov)


def test_restarts_respect_the_component_cap():
    rng = np.random.default_rng(4)
    lam, h = _users(rng, _three_centers(), 30)
    pop = _merged(lam, h, max_components=3)
    best = restarts.restarted_population(pop, lam, h, np.random.default_rng(5), 2)
    assert best is not None and best.n_learned == 3  # every size capped at 3
    assert Population(D, K).n_learned == 0  # nothing learned: only the isotropic component


def _run(spec: str):
    world = parse_world("dev").make(0)
    policy = load_policy(spec)
    calls = []
    original = restarts.replace_population

    def spy(pop, lam, h, rng, n):
        calls.append(lam.shape[0])
        return original(pop, lam, h, rng, n)

    module.replace_population, saved = spy, module.replace_population
    try:
        play(world, policy, policy_rng(0, spec))
    finally:
        module.replace_population = saved
    return calls, policy


def test_restarts_run_at_refit_points_once_the_users_have_doubled():
    calls, policy = _run("coduel:restarts=1")
    assert calls, "no restart in a dev run"
    assert calls[0] >= restarts.FIRST
    for earlier, later in itertools.pairwise(calls):
        assert later >= 2 * earlier
    assert set(calls) <= set(policy.full_passes)  # only at points of the refit schedule
    assert len(calls) <= int(np.log2(policy.n_sessions / restarts.FIRST)) + 1


def test_coduel_without_restarts_never_restarts():
    calls, _ = _run("coduel")
    assert calls == []


def test_restart_settings_pass_check_policy():
    check_policy(lambda: load_policy("coduel:restarts=2,restart_growth=1.5,nmin=2"))


def test_coduel_restarts_and_coduel_ask_take_the_restart_settings_chosen_on_dev():
    for spec in ("coduel-restarts", "coduel-ask"):
        policy = load_policy(spec)
        assert (policy.restarts, policy.restart_growth) == (8, 1.5)
    assert load_policy("coduel").restarts == 0  # CODuel as published keeps its population
    assert load_policy("coduel-ask:restarts=0").restarts == 0  # the first coduel-ask
    assert load_policy("coduel-restarts:restarts=0").restarts == 0


def test_coduel_restarts_passes_check_policy():
    check_policy(lambda: load_policy("coduel-restarts:nmin=2"))


@pytest.mark.skipif(not jit.ENABLED, reason="numba is not installed")
@pytest.mark.parametrize(("seed", "n", "size"), [(0, 12, 4), (1, 90, 6), (2, 400, 12)])
def test_compiled_kmeans_gives_numpy_partition_to_the_bit(seed, n, size, monkeypatch):
    """The compiled Lloyd loop sums in numpy's order, so the partitions (and the inertia that
    picks the tightest start) are those the published figures were computed with."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n, D)) * np.exp(rng.normal(size=(n, 1)))
    theta[: n // 3] += 3.0  # some structure, so that clusters of many users form
    fast = restarts.kmeans(theta, size, np.random.default_rng(seed))
    monkeypatch.setattr(jit, "ENABLED", False)
    slow = restarts.kmeans(theta, size, np.random.default_rng(seed))
    np.testing.assert_array_equal(fast[0], slow[0])
    assert fast[1] == slow[1]
