"""CODuel's population departures of issue 18: the split move (a component holding two
well-separated groups becomes two, one holding one group stays whole), births within a margin
of the best learned component, and the policy settings that switch them on."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.errors import SpecError
from prefduel.policies import check_policy, load_policy
from prefduel.policies.coduel.population import Population, component_evidence
from prefduel.policies.coduel.population import unidentified_direction as _u

D = 7
K = 6
U = _u(D, K)
Q = np.eye(D) - np.outer(U, U)


def _summary(rng, theta, clicks=24):
    """A 24-click user's likelihood summary (Fisher information of random clicks at theta,
    x4, and a noisy information vector), as in test_coduel_population."""
    lam = np.zeros((D, D))
    for _ in range(clicks):
        i, j = rng.choice(K, size=2, replace=False)
        z = np.zeros(D)
        z[i], z[j], z[K] = 1.0, -1.0, rng.normal()
        p = 1.0 / (1.0 + np.exp(-z @ theta))
        lam += 4.0 * p * (1 - p) * np.outer(z, z)
    vals, vecs = np.linalg.eigh(lam)
    root = vecs @ np.diag(np.sqrt(np.clip(vals, 0, None))) @ vecs.T
    return lam, lam @ theta + root @ rng.normal(size=D)


def _users(rng, centers, per_center, spread=0.2):
    lam, h = [], []
    for center in centers:
        for _ in range(per_center):
            li, hi = _summary(rng, center + spread * Q @ rng.normal(size=D))
            lam.append(li)
            h.append(hi)
    return np.stack(lam), np.stack(h)


def _merged(lam, h, **kwargs):
    """A population whose one learned component was fitted to all users (merged), by EM with
    births off."""
    pop = Population(D, K, **kwargs)
    n = lam.shape[0]
    pop.mu = np.vstack([np.zeros(D), np.zeros(D)])
    pop.cov = np.stack([np.eye(D), 4.0 * Q + np.outer(U, U)])
    pop.counts = np.array([0.0, float(n)])
    pop.born = [0, 0]
    pop.n_sessions = n
    pop.fit(lam, h, 10)
    assert pop.n_learned == 1
    return pop


def _two_centers():
    a = Q @ np.r_[2.5, -2.5, 1.0, -1.0, 0.0, 0.0, 0.5]
    return a, -a


def test_split_move_splits_a_component_holding_two_separated_groups():
    rng = np.random.default_rng(0)
    a, b = _two_centers()
    lam, h = _users(rng, [a, b], 30)
    pop = _merged(lam, h)
    assert np.linalg.norm(pop.mu[1] - a) > 1.5  # the merged component sits between the groups
    assert pop.try_split(lam, h)
    assert pop.n_learned == 2
    assert pop.splits == [pop.n_sessions]
    assert pop.born[1:] == [pop.n_sessions] * 2  # the children get the grace period
    children = pop.mu[1:]
    for center in (a, b):  # one child on each group
        assert min(np.linalg.norm(c - center) for c in children) < 0.6
    assert pop.counts.sum() == pytest.approx(60.0)
    assert sorted(pop.counts[1:]) == pytest.approx([30.0, 30.0], abs=2.0)
    # users now sit in the child of their own group
    loglik = component_evidence(lam, h, pop.mu, pop.cov)[0]
    assign = (loglik + np.log(pop.weights())).argmax(axis=1)
    assert len(set(assign[:30])) == 1 and len(set(assign[30:])) == 1
    assert assign[0] != assign[-1]
    for mu, cov in zip(pop.mu, pop.cov, strict=True):  # the u direction stays isotropic
        assert abs(mu @ U) < 1e-12
        np.testing.assert_allclose(cov @ U, U, atol=1e-12)


def test_split_move_keeps_a_component_holding_one_group():
    rng = np.random.default_rng(1)
    a, _ = _two_centers()
    lam, h = _users(rng, [a], 60)
    pop = _merged(lam, h)
    mu, cov = pop.mu.copy(), pop.cov.copy()
    assert not pop.try_split(lam, h)  # the likelihood gain does not pay the BIC price
    np.testing.assert_array_equal(pop.mu, mu)
    np.testing.assert_array_equal(pop.cov, cov)
    assert pop.splits == []


def test_split_move_respects_the_cap_and_needs_a_learned_component():
    rng = np.random.default_rng(2)
    a, b = _two_centers()
    lam, h = _users(rng, [a, b], 20)
    assert not _merged(lam, h, max_components=1).try_split(lam, h)
    assert not Population(D, K).try_split(lam, h)


def test_split_penalty_is_bic_on_the_identifiable_parameters():
    # 6 identifiable dimensions: 6 mean + 21 covariance entries + 1 weight
    assert Population(D, K).split_penalty(300) == pytest.approx(14.0 * np.log(300))
    assert Population(3, 6).split_penalty(10) == pytest.approx(0.5 * 10 * np.log(10))


def test_split_moves_run_every_split_every_sessions():
    rng = np.random.default_rng(3)
    a, b = _two_centers()
    pop = Population(D, K, split_every=4)
    attempts = []
    pop.try_split = lambda lam, h: attempts.append(pop.n_sessions) or False
    lam, h = [], []
    for s in range(12):
        li, hi = _summary(rng, a if s % 2 else b)
        lam.append(li)
        h.append(hi)
        pop.add_session(li, hi, np.stack(lam), np.stack(h), 1)
    assert attempts == [4, 8, 12]
    never = Population(D, K)  # split_every = 0: no split moves (the default)
    never.try_split = lambda lam, h: pytest.fail("split attempted")
    never.add_session(lam[0], h[0], np.stack(lam[:1]), np.stack(h[:1]), 1)


def test_birth_margin_lets_a_near_session_found_a_component():
    """A session explained slightly better by the learned component than by the isotropic
    prior founds no component under the seed's rule, but does within a margin covering the
    difference."""
    rng = np.random.default_rng(4)
    a, _ = _two_centers()
    lam, h = _users(rng, [a], 12)
    for margin, expect in ((0.0, False), (1e6, True)):
        pop = _merged(lam, h, birth_margin=margin)
        li, hi = _summary(rng, 0.5 * a)
        ll = component_evidence(li[None], hi[None], pop.mu, pop.cov)[0]
        assert ll[0, 0] < ll[0, 1]  # the learned component explains it better
        assert pop.add_session(li, hi, np.r_[lam, li[None]], np.r_[h, hi[None]], 1) is expect


# ----------------------------------------------------------------------------- the policy


def test_population_settings_reach_the_population():
    policy = load_policy("coduel:split=on,split_every=7,birth_margin=2.5")
    policy.reset(np.random.default_rng(0), {"K": K, "d": D, "S": 4, "N": 3, "beta": 1, "b": 0})
    assert (policy.pop.split_every, policy.pop.birth_margin) == (7, 2.5)
    default = load_policy("coduel")
    default.reset(np.random.default_rng(0), {"K": K, "d": D, "S": 4, "N": 3, "beta": 1, "b": 0})
    assert (default.pop.split_every, default.pop.birth_margin) == (0, 0.0)
    assert (default.split, default.split_every) == (False, 10)
    off = load_policy("coduel:split=off,split_every=3")
    off.reset(np.random.default_rng(0), {"K": K, "d": D, "S": 4, "N": 3, "beta": 1, "b": 0})
    assert off.pop.split_every == 0


def test_population_settings_pass_check_policy():
    check_policy(lambda: load_policy("coduel:split=on,split_every=2,birth_margin=1,nmin=2"))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("coduel:split=maybe", "split: expected on or off, got 'maybe'"),
        ("coduel:split_every=0", "split_every: expected an integer >= 1, got 0"),
        ("coduel:split_every=2.5", "split_every: expected an integer, got 2.5"),
        ("coduel:birth_margin=-1", "birth_margin: expected a number >= 0"),
        ("coduel:birth_margin=wide", "birth_margin: expected a number, got 'wide'"),
    ],
)
def test_bad_population_settings_are_named(spec, message):
    with pytest.raises(SpecError, match=message):
        load_policy(spec)
