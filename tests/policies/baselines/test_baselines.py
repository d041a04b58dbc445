"""The baseline field: each rule against a slow reference or a property it must have."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from prefduel.core.errors import SpecError
from prefduel.policies import POLICIES, load_policy
from prefduel.policies.base import policy_context
from prefduel.policies.baselines._common import marginal_summary, pair_widths
from prefduel.policies.baselines.coldb import logistic_map
from prefduel.policies.baselines.linear_duel import (
    colstim_pair,
    maxinp_candidates,
    maxpair_scores,
)
from prefduel.policies.baselines.rucb import rucb_ucb
from prefduel.policies.laplace import LaplaceBelief

BASELINES = (
    "rucb",
    "colstim",
    "maxinp",
    "maxpair-ucb",
    "dts-laplace",
    "coldb",
    "meta-ts",
    "hier-ts",
)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _persona_features(rng: np.random.Generator, n: int, s: int, k: int = 6) -> np.ndarray:
    """``(n, s, k, k + 1)`` TutorDuel-layout features: persona indicators, then a rater score."""
    phis = np.zeros((n, s, k, k + 1))
    phis[..., :k] = np.eye(k)
    phis[..., k] = rng.normal(size=(n, s, k))
    return phis


def _drive(policy, thetas: np.ndarray, phis: np.ndarray, seed: int = 0, *, stop=None):
    """Run ``policy`` on users with true weights ``thetas`` (n, d) and features ``phis``
    (n, s, k, d), clicks from the logistic model. ``stop=(n, s)`` returns before that
    round's select(). Returns the shown pairs ``(n * s, 2)``."""
    n, s, k, d = phis.shape
    rng = np.random.default_rng(seed)
    policy.reset(np.random.default_rng(seed + 1), policy_context(n, s, k, d))
    pairs = []
    for u in range(n):
        policy.start_student()
        for r in range(s):
            if stop == (u, r):
                return np.array(pairs)
            i, j = policy.select(phis[u, r])
            util = phis[u, r] @ thetas[u]
            policy.update(int(rng.random() < _sigmoid(util[i] - util[j])))
            pairs.append((i, j))
        policy.end_student()
    return np.array(pairs)


# ------------------------------------------------------------------------------ registry


def test_all_baselines_are_registered():
    assert set(BASELINES) <= set(POLICIES.ids())


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("rucb:alpha=0", "alpha"),
        ("rucb:alpha=-1", "alpha"),
        ("colstim:c=-1", "colstim: c: expected a number >= 0"),
        ("colstim:scale=big", "scale"),
        ("maxinp:beta=-0.5", "beta"),
        ("maxpair-ucb:beta=true", "beta"),
        ("dts-laplace:draws=0", "draws"),
        ("dts-laplace:draws=2.5", "draws"),
        ("dts-laplace:scale=0", "scale"),
        ("coldb:threshold=-1", "threshold"),
        ("coldb:refit=1.5", "refit"),
        ("coldb:prior_var=0", "prior_var"),
        ("meta-ts:rule=ucb", "rule"),
        ("meta-ts:prior_var=0", "prior_var"),
        ("hier-ts:meta_var=-2", "meta_var"),
        ("hier-ts:gamma=1", "gamma"),
    ],
)
def test_bad_settings_raise_spec_error(spec, fragment):
    with pytest.raises(SpecError) as info:
        load_policy(spec)
    assert fragment in str(info.value)
    assert spec.split(":")[0] in str(info.value)


@pytest.mark.parametrize(
    "spec",
    [
        "rucb:alpha=2",
        "colstim:c=0,scale=0",
        "maxinp:beta=0",
        "maxpair-ucb:beta=0",
        "dts-laplace:draws=1",
        "coldb:threshold=0,refit=0",
        "meta-ts:rule=dts",
        "hier-ts:rule=greedy",
    ],
)
def test_settings_are_accepted(spec):
    load_policy(spec)


# ------------------------------------------------------------------------------ shared math


def test_pair_widths_match_explicit_quadratic_forms():
    rng = np.random.default_rng(1)
    phi = rng.normal(size=(5, 4))
    a = rng.normal(size=(4, 4))
    sigma = a @ a.T + 0.1 * np.eye(4)
    widths = pair_widths(phi, sigma)
    for i, j in itertools.product(range(5), repeat=2):
        z = phi[i] - phi[j]
        assert widths[i, j] == pytest.approx(math.sqrt(max(z @ sigma @ z, 0.0)), abs=1e-9)


def test_marginal_summary_matches_the_direct_formula():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(3, 3))
    lam = a @ a.T + 0.5 * np.eye(3)
    h = rng.normal(size=3)
    sigma0 = np.diag([0.5, 1.0, 2.0])
    prec, info = marginal_summary(lam, h, np.linalg.inv(sigma0))
    direct = np.linalg.inv(sigma0 + np.linalg.inv(lam))
    assert np.allclose(prec, direct)
    assert np.allclose(info, direct @ np.linalg.solve(lam, h))


# ------------------------------------------------------------------------------ rucb


def test_rucb_matrix_matches_the_explicit_formula():
    rng = np.random.default_rng(3)
    wins = rng.integers(0, 6, size=(5, 5)).astype(float)
    wins[1, 3] = wins[3, 1] = 0.0  # an unplayed pair
    np.fill_diagonal(wins, 0.0)
    t, alpha = 57, 0.51
    u = rucb_ucb(wins, t, alpha)
    for i, j in itertools.product(range(5), repeat=2):
        n = wins[i, j] + wins[j, i]
        if i == j:
            expected = 0.5
        elif n == 0:
            expected = 1.0
        else:
            expected = wins[i, j] / n + math.sqrt(alpha * math.log(t) / n)
        assert u[i, j] == pytest.approx(expected)


def test_rucb_state_is_pooled_and_its_matrix_tracks_the_clicks():
    policy = load_policy("rucb:alpha=0.51")
    rng = np.random.default_rng(4)
    phis = _persona_features(rng, 3, 10)
    pairs = _drive(policy, np.zeros((3, 7)), phis)
    assert policy.t == 30 and policy.wins.sum() == 30  # never reset between users
    played = np.zeros((6, 6))
    for i, j in pairs:
        played[i, j] += 1
        played[j, i] += 1
    assert np.array_equal(policy.wins + policy.wins.T, played)
    assert np.allclose(policy.ucb_matrix(), rucb_ucb(policy.wins, 31, 0.51))


def test_rucb_settles_on_the_condorcet_winner():
    # persona 2 beats everyone (utilities in logits); non-contextual, pooled over 40 users
    rng = np.random.default_rng(5)
    phis = _persona_features(rng, 40, 30)
    theta = np.array([0.0, 0.5, 2.5, -0.5, 1.0, -1.0, 0.0])
    pairs = _drive(load_policy("rucb"), np.tile(theta, (40, 1)), phis)
    late = pairs[-300:]
    assert np.mean((late == 2).any(axis=1)) > 0.8


# ------------------------------------------------------------------------------ colstim


def _slow_colstim(phi, mu, sigma, noise, c):
    k = phi.shape[0]
    first = max(range(k), key=lambda a: phi[a] @ mu + noise[a])
    best, arg = -np.inf, None
    for b in range(k):
        if b == first:
            continue
        z = phi[b] - phi[first]
        value = phi[b] @ mu + c * math.sqrt(z @ sigma @ z)
        if value > best:
            best, arg = value, b
    return first, arg


def test_colstim_pair_matches_a_slow_reference():
    rng = np.random.default_rng(6)
    for _ in range(30):
        phi = rng.normal(size=(6, 4))
        mu = rng.normal(size=4)
        a = rng.normal(size=(4, 4))
        sigma = a @ a.T
        noise = rng.gumbel(size=6)
        c = float(rng.uniform(0, 3))
        assert colstim_pair(phi, mu, sigma, noise, c) == _slow_colstim(phi, mu, sigma, noise, c)


def test_colstim_without_perturbation_plays_greedy_then_optimistic_competitor():
    rng = np.random.default_rng(7)
    phis = _persona_features(rng, 2, 12)
    thetas = rng.normal(size=(2, 7))
    policy = load_policy("colstim:scale=0,c=1.5")
    _drive(policy, thetas, phis, stop=(1, 7))
    phi = phis[1, 7]
    expected = _slow_colstim(phi, policy.belief.mu, policy.belief.sigma, np.zeros(6), 1.5)
    assert policy.select(phi) == expected


def test_colstim_first_arm_follows_the_gumbel_max_distribution():
    # with a flat belief, argmax of mu.phi + scale * Gumbel is a softmax of mu.phi / scale
    policy = load_policy("colstim:scale=2")
    policy.reset(np.random.default_rng(8), policy_context(1, 1, 3, 3))
    policy.belief = LaplaceBelief(np.array([1.0, 0.0, -1.0]), np.eye(3))
    firsts = np.array([policy.select(np.eye(3))[0] for _ in range(4000)])
    freq = np.bincount(firsts, minlength=3) / firsts.size
    soft = np.exp(np.array([1.0, 0.0, -1.0]) / 2)
    assert np.allclose(freq, soft / soft.sum(), atol=0.03)


# ------------------------------------------------------------------------------ maxinp


def test_maxinp_candidates_match_a_slow_reference():
    rng = np.random.default_rng(9)
    for _ in range(30):
        phi = rng.normal(size=(6, 4))
        mu = 2 * rng.normal(size=4)
        a = rng.normal(size=(4, 4))
        sigma = 0.2 * a @ a.T
        beta = float(rng.uniform(0, 2))
        slow = [
            all(
                (phi[i] - phi[j]) @ mu
                + beta * math.sqrt(max((phi[i] - phi[j]) @ sigma @ (phi[i] - phi[j]), 0))
                >= 0
                for j in range(6)
            )
            for i in range(6)
        ]
        assert maxinp_candidates(phi, mu, sigma, beta).tolist() == slow


def test_maxinp_drops_a_clearly_dominated_persona_and_shows_the_widest_candidate_pair():
    rng = np.random.default_rng(10)
    phis = _persona_features(rng, 1, 200)
    phis[..., 6] = 0.0  # no rater score: a fixed order of the personas
    theta = np.array([[1.5, 1.0, 0.8, 0.5, 0.0, -4.0, 0.0]])  # persona 5 is far behind
    policy = load_policy("maxinp:beta=2")
    _drive(policy, theta, phis, stop=(0, 199))
    phi = phis[0, 199]
    cand = policy.candidates(phi)
    assert not cand[5]
    assert cand[0]  # the best persona survives
    assert cand.sum() >= 2
    i, j = policy.select(phi)
    assert cand[i] and cand[j]
    widths = pair_widths(phi, policy.belief.sigma)
    best = max(widths[a, b] for a in range(6) for b in range(6) if a != b and cand[a] and cand[b])
    assert widths[i, j] == pytest.approx(best)


# ------------------------------------------------------------------------------ maxpair-ucb


def test_maxpair_ucb_picks_the_argmax_pair_of_the_explicit_score():
    rng = np.random.default_rng(11)
    phis = _persona_features(rng, 2, 10)
    policy = load_policy("maxpair-ucb:beta=1.5")
    _drive(policy, rng.normal(size=(2, 7)), phis, stop=(1, 4))
    phi, mu, sigma = phis[1, 4], policy.belief.mu, policy.belief.sigma
    scores = maxpair_scores(phi, mu, sigma, 1.5)

    def slow(a: int, b: int) -> float:
        z = phi[a] - phi[b]
        return phi[a] @ mu + phi[b] @ mu + 1.5 * math.sqrt(max(z @ sigma @ z, 0.0))

    for a, b in itertools.permutations(range(6), 2):
        assert scores[a, b] == pytest.approx(slow(a, b))
    i, j = policy.select(phi)
    assert slow(i, j) == pytest.approx(
        max(slow(a, b) for a, b in itertools.permutations(range(6), 2))
    )


# ------------------------------------------------------------------------------ dts-laplace


def test_dts_first_arm_is_the_posterior_probability_of_being_best():
    mu = np.array([0.5, 0.3, 0.0, -0.2])
    sigma = 0.3 * np.eye(4)
    policy = load_policy("dts-laplace:scale=1.0")
    policy.reset(np.random.default_rng(12), policy_context(1, 1, 4, 4))
    policy.start_student()
    policy.belief = LaplaceBelief(mu, sigma)
    pairs = np.array([policy.select(np.eye(4)) for _ in range(3000)])
    assert (pairs[:, 0] != pairs[:, 1]).all()
    draws = np.random.default_rng(13).multivariate_normal(mu, sigma, size=40000)
    p_best = np.bincount(draws.argmax(axis=1), minlength=4) / draws.shape[0]
    freq = np.bincount(pairs[:, 0], minlength=4) / pairs.shape[0]
    assert np.allclose(freq, p_best, atol=0.03)


def test_dts_with_a_sharp_posterior_falls_back_to_the_top_two():
    policy = load_policy("dts-laplace:draws=3")
    policy.reset(np.random.default_rng(14), policy_context(1, 1, 4, 4))
    policy.start_student()
    policy.belief = LaplaceBelief(np.array([0.0, 3.0, 1.0, 2.0]), 1e-6 * np.eye(4))
    assert policy.select(np.eye(4)) == (1, 3)


# ------------------------------------------------------------------------------ coldb


def test_logistic_map_reaches_the_ridge_logistic_optimum():
    rng = np.random.default_rng(15)
    z = rng.normal(size=(300, 3))
    y = (rng.random(300) < 1 / (1 + np.exp(-z @ np.array([1.0, -0.5, 0.2])))).astype(float)
    theta, lam = logistic_map(z, y, 2.0, np.zeros(3), 12)
    p = 1 / (1 + np.exp(-z @ theta))
    assert np.allclose(z.T @ (y - p) - theta / 2.0, 0.0, atol=1e-8)  # stationary point
    assert np.allclose(lam, (z * (p * (1 - p))[:, None]).T @ z)


def test_coldb_separates_two_well_separated_groups():
    rng = np.random.default_rng(16)
    n, s = 16, 40
    phis = rng.normal(size=(n, s, 6, 4))  # generic features: every pair informs theta
    base = np.array([2.0, -1.0, 1.0, 0.0])
    group = np.arange(n) % 2
    thetas = np.where(group[:, None] == 0, base, -base) + 0.1 * rng.normal(size=(n, 4))
    policy = load_policy("coldb:threshold=2.5")
    _drive(policy, thetas, phis)
    labels = policy.clusters()
    assert len(set(labels[group == 0])) == 1
    assert len(set(labels[group == 1])) == 1
    assert labels[0] != labels[1]
    # each component's pooled estimate points the way of its group
    for g, sign in ((0, 1.0), (1, -1.0)):
        lab = policy.label[np.flatnonzero(group == g)[0]]
        est = np.linalg.solve(policy.ridge + policy.comp_lam[lab], policy.comp_h[lab])
        assert sign * est @ base > 0.8 * base @ base


def test_coldb_threshold_extremes_give_singletons_or_one_pool():
    rng = np.random.default_rng(17)
    phis = _persona_features(rng, 6, 8)
    thetas = rng.normal(size=(6, 7))
    singles = load_policy("coldb:threshold=0")
    _drive(singles, thetas, phis)
    assert sorted(singles.clusters()) == list(range(6))
    pool = load_policy("coldb:threshold=1000,refit=0")
    _drive(pool, thetas, phis)
    assert set(pool.clusters()) == {0}


def test_coldb_cluster_belief_starts_from_the_pooled_fit():
    rng = np.random.default_rng(18)
    phis = _persona_features(rng, 5, 10)
    thetas = rng.normal(size=(5, 7))
    policy = load_policy("coldb:threshold=1000,refit=20")
    _drive(policy, thetas, phis, stop=(4, 0))
    z = policy.z[:4, :10].reshape(-1, 7)
    y = policy.y[:4, :10].reshape(-1)
    theta, _ = logistic_map(z, y, 1.0, np.zeros(7), 30)
    assert np.allclose(policy.cluster.mu, theta, atol=1e-6)


def test_coldb_grows_past_the_announced_size():
    rng = np.random.default_rng(19)
    policy = load_policy("coldb:threshold=1000")
    policy.reset(np.random.default_rng(0), policy_context(1, 2, 6, 7))  # announces 1 x 2
    for _ in range(3):
        policy.start_student()
        for _ in range(5):
            policy.select(_persona_features(rng, 1, 1)[0, 0])
            policy.update(1)
        policy.end_student()
    assert policy.n_done == 3 and policy.count[:3].tolist() == [5, 5, 5]
    assert set(policy.clusters()) == {0}


# ------------------------------------------------------------------------------ meta-ts, hier-ts


def _population(seed: int, n: int = 40, s: int = 30):
    rng = np.random.default_rng(seed)
    shared = np.array([1.5, -1.0, 0.5, 0.0])
    thetas = shared + 0.3 * rng.normal(size=(n, 4))
    phis = rng.normal(size=(n, s, 6, 4))
    return shared, thetas, phis


@pytest.mark.parametrize("spec", ["meta-ts", "hier-ts"])
def test_shared_mean_posterior_moves_to_the_population_mean(spec):
    shared, thetas, phis = _population(19)
    policy = load_policy(spec)
    _drive(policy, thetas, phis)
    mean, cov = policy.meta_posterior()
    assert policy.n_users == 40
    assert np.linalg.norm(mean - shared) < 0.3 * np.linalg.norm(shared)
    assert np.trace(cov) < 0.1 * 4  # far tighter than the meta prior (meta_var I)


def test_meta_ts_starts_each_user_from_a_draw_of_the_meta_posterior():
    _, thetas, phis = _population(20, n=30, s=20)
    policy = load_policy("meta-ts")
    _drive(policy, thetas, phis, stop=(29, 0))
    mean, _ = policy.meta_posterior()
    assert np.linalg.norm(policy.user_prior_mean - mean) < 0.5
    assert not np.allclose(policy.user_prior_mean, mean)  # a draw, not the mean
    assert np.allclose(policy.belief.mu, policy.user_prior_mean)


def test_hier_ts_user_mean_matches_the_joint_gaussian():
    _, thetas, phis = _population(21, n=10, s=20)
    policy = load_policy("hier-ts:prior_var=0.5,meta_var=2")
    _drive(policy, thetas, phis, stop=(9, 12))
    # joint Gaussian over (shared mean, user theta) in information form
    d = 4
    s0 = policy.prior_prec
    post_prec = np.linalg.inv(policy.belief.sigma)
    lam = post_prec - s0
    h = post_prec @ policy.belief.mu - s0 @ policy.user_prior_mean
    joint = np.block([[policy.meta_prec + s0, -s0], [-s0, s0 + lam]])
    info = np.concatenate([policy.meta_info, h])
    sol = np.linalg.solve(joint, info)
    assert np.allclose(policy.user_posterior_mean(), sol[d:], atol=1e-8)
    assert np.allclose(policy.hyper_posterior()[0], sol[:d], atol=1e-8)
