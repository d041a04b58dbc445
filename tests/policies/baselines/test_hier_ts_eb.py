"""hier-ts-eb: the empirical-Bayes prior covariance against numpy on hand examples, and what a
user relies on: the learned prior narrows on a tight population and stays positive definite."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.policies import load_policy
from prefduel.policies.base import policy_context
from prefduel.policies.baselines._common import marginal_summary
from prefduel.policies.baselines.hier_eb import batch_marginal_summary, eb_covariance


def _hand_users():
    """Three users in d = 2: likelihood precisions and informations written out by hand."""
    lams = np.array([[[2.0, 0.5], [0.5, 1.0]], [[1.0, 0.0], [0.0, 3.0]], [[0.5, 0.0], [0.0, 0.0]]])
    hs = np.array([[1.0, -0.5], [0.0, 2.0], [0.4, 0.0]])
    return lams, hs


def test_eb_covariance_matches_the_stated_estimator_on_a_hand_example():
    lams, hs = _hand_users()
    prior_cov = np.array([[0.8, 0.1], [0.1, 0.5]])
    prior_prec = np.linalg.inv(prior_cov)
    mean = np.array([0.3, -0.2])
    got = eb_covariance(lams, hs, prior_prec, mean, prior_var=1.0, users=2.0, floor=0.01)
    # each user's posterior under N(mean, prior_cov), then the law of total variance
    covs = [np.linalg.inv(prior_prec + lam) for lam in lams]
    mus = np.array([c @ (prior_prec @ mean + h) for c, h in zip(covs, hs, strict=True)])
    moment = np.cov(mus.T, bias=True) + np.mean(covs, axis=0)
    want = (3 * moment + 2 * np.eye(2)) / 5
    assert np.allclose(got, want)
    assert np.allclose(got, got.T)


def test_eb_covariance_floors_the_eigenvalues():
    lams = np.repeat(1e6 * np.eye(2)[None], 4, axis=0)  # four users known exactly...
    hs = np.repeat(np.array([[1e6, -1e6]]), 4, axis=0)  # ...all at (1, -1): no spread
    got = eb_covariance(lams, hs, np.eye(2), np.zeros(2), prior_var=2.0, users=1e-9, floor=0.05)
    values = np.linalg.eigvalsh(got)
    assert values.min() == pytest.approx(0.05 * 2.0)  # the floor, relative to prior_var


def test_batch_marginal_summary_is_the_sum_of_the_single_ones():
    lams, hs = _hand_users()
    prior_prec = np.linalg.inv(np.array([[0.8, 0.1], [0.1, 0.5]]))
    prec, info = batch_marginal_summary(lams, hs, prior_prec)
    singles = [marginal_summary(lam, h, prior_prec) for lam, h in zip(lams, hs, strict=True)]
    assert np.allclose(prec, sum(p for p, _ in singles))
    assert np.allclose(info, sum(p for _, p in singles))


def _drive(policy, thetas, phis, seed=0):
    n, s, k, d = phis.shape
    rng = np.random.default_rng(seed)
    policy.reset(np.random.default_rng(seed + 1), policy_context(n, s, k, d))
    for u in range(n):
        policy.start_student()
        for r in range(s):
            i, j = policy.select(phis[u, r])
            util = phis[u, r] @ thetas[u]
            policy.update(int(rng.random() < 1 / (1 + np.exp(-(util[i] - util[j])))))
        policy.end_student()


def _learned_prior(spread: float):
    rng = np.random.default_rng(5)
    n, s, d = 60, 30, 4
    thetas = np.array([1.5, -1.0, 0.5, 0.0]) + spread * rng.normal(size=(n, d))
    phis = rng.normal(size=(n, s, 6, d))
    policy = load_policy("hier-ts-eb")
    _drive(policy, thetas, phis)
    return policy


def test_the_learned_prior_follows_the_spread_of_the_population():
    tight, wide = _learned_prior(0.15), _learned_prior(2.0)
    values = np.linalg.eigvalsh(tight.prior_cov)
    assert values.max() < 0.5  # below the starting prior_var = 1 in every direction
    assert values.min() >= 0.01 - 1e-12  # the floor
    assert np.trace(wide.prior_cov) > 2 * np.trace(tight.prior_cov)


def test_the_shared_mean_and_the_next_user_use_the_learned_prior():
    policy = _learned_prior(0.15)
    d = policy.d
    assert np.allclose(policy.prior_prec @ policy.prior_cov, np.eye(d))
    prec, info = batch_marginal_summary(*policy.likelihoods(), policy.prior_prec)
    assert np.allclose(policy.meta_prec, np.eye(d) / policy.meta_var + prec)
    assert np.allclose(policy.meta_info, info)
    policy.start_student()
    assert np.allclose(policy.belief.sigma, policy.prior_cov)
    assert np.allclose(policy.belief.mu, policy.meta_posterior()[0])


def test_hier_ts_eb_with_a_huge_shrinkage_is_hier_ts():
    rng = np.random.default_rng(6)
    thetas = rng.normal(size=(8, 4))
    phis = rng.normal(size=(8, 10, 6, 4))
    eb = load_policy("hier-ts-eb:eb_users=1e12")
    plain = load_policy("hier-ts")
    _drive(eb, thetas, phis)
    _drive(plain, thetas, phis)
    assert np.allclose(eb.prior_cov, np.eye(4))
    assert np.allclose(eb.meta_posterior()[0], plain.meta_posterior()[0])
