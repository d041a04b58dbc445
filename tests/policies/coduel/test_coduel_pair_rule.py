"""CODuel's pair rules: the knowledge-gradient lookahead against a slow loop, its greedy limit,
and a constructed case where paying now to tell components apart is worth it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from prefduel.core.btl import top_two
from prefduel.policies.coduel.pair_rule import greedy_regret, lookahead_pair
from prefduel.policies.laplace import laplace_step

D = 7
K = 6


def _mixture_regret(weights, mus, phi, i, j):
    """sum_c w_c (2 max_p u_cp - u_ci - u_cj), u_c = phi mu_c, by loops."""
    total = 0.0
    for w, mu in zip(weights, mus, strict=True):
        u = [float(phi[p] @ mu) for p in range(phi.shape[0])]
        total += w * (2 * max(u) - u[i] - u[j])
    return total


def _greedy_by_loops(weights, mus, phi):
    k = phi.shape[0]
    mean_u = [
        sum(w * float(phi[p] @ mu) for w, mu in zip(weights, mus, strict=True)) for p in range(k)
    ]
    order = sorted(range(k), key=lambda p: -mean_u[p])
    return order[0], order[1]


def slow_lookahead(weights, mu, sigma, phi, bank, remaining):
    """For every pair and outcome: copy the belief, update each component with the scalar
    Laplace step, reweight, and average greedy regret over the bank, all by explicit loops."""
    k = phi.shape[0]
    values = {}
    for a, b in itertools.combinations(range(k), 2):
        now = _mixture_regret(weights, mu, phi, a, b)
        z = phi[a] - phi[b]
        future = 0.0
        for y in (1, 0):
            joint, new_mus = [], []
            for c in range(len(weights)):
                new_mu, _, p_first = laplace_step(mu[c].copy(), sigma[c].copy(), z, y)
                joint.append(weights[c] * (p_first if y == 1 else 1.0 - p_first))
                new_mus.append(new_mu)
            p_y = sum(joint)
            new_w = [x / p_y for x in joint]
            regrets = []
            for q in range(bank.shape[0]):
                i, j = _greedy_by_loops(new_w, new_mus, bank[q])
                regrets.append(_mixture_regret(new_w, new_mus, bank[q], i, j))
            future += p_y * sum(regrets) / len(regrets)
        values[(a, b)] = now + remaining * future
    return values


def _random_belief(rng, c, cov_scale=0.3):
    weights = rng.dirichlet(np.ones(c))
    mu = rng.normal(scale=1.2, size=(c, D))
    sigma = []
    for _ in range(c):
        a = rng.normal(size=(D, D))
        sigma.append(cov_scale * (a @ a.T / D + 0.2 * np.eye(D)))
    return weights, mu, np.stack(sigma)


def _question(rng, q=None):
    shape = (K, D) if q is None else (q, K, D)
    phi = rng.normal(size=shape)
    phi[..., :K] = np.eye(K)
    return phi


@pytest.mark.parametrize(("seed", "c", "remaining"), [(0, 3, 5), (1, 2, 23), (2, 4, 1), (3, 1, 7)])
def test_lookahead_matches_a_slow_loop(seed, c, remaining):
    rng = np.random.default_rng(seed)
    weights, mu, sigma = _random_belief(rng, c)
    phi, bank = _question(rng), _question(rng, 6)
    mu0, sigma0 = mu.copy(), sigma.copy()
    pair, values = lookahead_pair(weights, mu, sigma, phi, bank, remaining)
    ref = slow_lookahead(weights, mu, sigma, phi, bank, remaining)
    assert values.shape == (K * (K - 1) // 2,)
    np.testing.assert_allclose(values, list(ref.values()), rtol=0, atol=1e-8)
    best = min(ref, key=ref.get)
    assert set(pair) == set(best)
    # listed with the higher mixture-mean utility first
    mean_u = weights @ (mu @ phi.T)
    assert mean_u[pair[0]] >= mean_u[pair[1]]
    # the belief is not modified
    np.testing.assert_array_equal(mu, mu0)
    np.testing.assert_array_equal(sigma, sigma0)


@pytest.mark.parametrize("c", [1, 3])
def test_with_no_rounds_left_the_lookahead_is_greedy(c):
    """remaining = 0: the value is the regret now, sum_c w_c (2 max u_c) - (ubar_i + ubar_j),
    minimized by the top two of the mixture-mean utilities."""
    for seed in range(10):
        rng = np.random.default_rng(40 + seed)
        weights, mu, sigma = _random_belief(rng, c)
        phi = _question(rng)
        pair, _ = lookahead_pair(weights, mu, sigma, phi, _question(rng, 3), 0)
        assert pair == top_two(phi @ (weights @ mu))
        assert pair == _greedy_by_loops(weights, mu, phi)


def test_lookahead_pays_now_to_tell_disagreeing_components_apart():
    """Four personas, phi = I (the utility of persona p is theta_p), two equally likely
    components with small covariances:

        component A: u = ( 3, -3, 2, 0.3)      component B: u = (-3, 3, 2, 0.3)

    Mixture means are (0, 0, 2, 0.3), so greedy shows (2, 3). Both components agree on that
    click (2 beats 3 with the same probability), so it says nothing about who the user is and
    greedy play keeps a regret of 3.7 per round for the whole session. Showing (0, 1) costs
    6 now, but A expects persona 0 to win it and B persona 1, so its click reveals the
    component, after which greedy play shows (0, 2) or (1, 2) with regret 1 per round. With
    10 rounds left (values: (0, 1) 16.2 < (0, 2) 22.4 < (2, 3) 40.7) the lookahead picks an
    informative pair; with none left it is greedy."""
    k, d = 4, 4
    phi = np.eye(k)
    weights = np.array([0.5, 0.5])
    mu = np.array([[3.0, -3.0, 2.0, 0.3], [-3.0, 3.0, 2.0, 0.3]])
    sigma = np.stack([0.05 * np.eye(d)] * 2)
    bank = np.stack([np.eye(k)] * 4)
    greedy = top_two(weights @ mu)
    assert greedy == (2, 3)

    pair, values = lookahead_pair(weights, mu, sigma, phi, bank, remaining=10)
    ref = slow_lookahead(weights, mu, sigma, phi, bank, 10)
    np.testing.assert_allclose(values, list(ref.values()), atol=1e-8)
    assert set(pair) != set(greedy)
    # the chosen pair costs more now ...
    assert _mixture_regret(weights, mu, phi, *pair) > _mixture_regret(weights, mu, phi, *greedy)
    # ... but the components disagree about its click
    z = phi[pair[0]] - phi[pair[1]]
    p_a = laplace_step(mu[0], sigma[0], z, 1)[2]
    p_b = laplace_step(mu[1], sigma[1], z, 1)[2]
    assert abs(p_a - p_b) > 0.5
    # and the greedy pair's click is uninformative
    zg = phi[greedy[0]] - phi[greedy[1]]
    assert laplace_step(mu[0], sigma[0], zg, 1)[2] == pytest.approx(
        laplace_step(mu[1], sigma[1], zg, 1)[2], abs=1e-12
    )
    # with nothing left to learn for, greedy again
    assert lookahead_pair(weights, mu, sigma, phi, bank, remaining=0)[0] == greedy


def test_greedy_regret_matches_loops():
    rng = np.random.default_rng(7)
    weights = rng.dirichlet(np.ones(3))
    util = rng.normal(size=(3, 5, K))  # (C, Q, K)
    out = greedy_regret(weights, util)
    assert out.shape == (5,)
    for q in range(5):
        mean_u = weights @ util[:, q]
        i, j = np.argsort(-mean_u)[:2]
        expect = sum(
            weights[c] * (2 * util[c, q].max() - util[c, q, i] - util[c, q, j]) for c in range(3)
        )
        assert out[q] == pytest.approx(expect, abs=1e-12)
    # batched leading dimensions
    w2 = np.stack([weights, weights[::-1]])
    u2 = np.stack([util, util[::-1]])
    np.testing.assert_allclose(greedy_regret(w2, u2)[0], out, atol=1e-12)

