"""Bradley-Terry fits and regret math against slow, obviously-correct references."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize, root

from prefduel.core.btl import (
    btl_matrix,
    fit_bt_ridge,
    pairs_of,
    sigmoid,
    sigmoid_scalar,
    top_two,
)
from prefduel.core.regret import floor_regret, pair_regret, random_regret, score


def _bt_objective_reference(prob: np.ndarray, ridge: float) -> np.ndarray:
    """Maximize the documented ridge BT log-likelihood of one K x K matrix with scipy.

    Written pair by pair from the docstring's formula; scipy's trust-region Newton does the
    optimization.
    """
    k = prob.shape[0]
    pairs = list(itertools.combinations(range(k), 2))

    def neg(beta):
        val = 0.5 * ridge * beta @ beta
        for a, b in pairs:
            x = beta[a] - beta[b]
            val += prob[a, b] * np.logaddexp(0.0, -x) + (1 - prob[a, b]) * np.logaddexp(0.0, x)
        return val

    def grad(beta):
        g = ridge * beta.copy()
        for a, b in pairs:
            resid = prob[a, b] - 1.0 / (1.0 + np.exp(-(beta[a] - beta[b])))
            g[a] -= resid
            g[b] += resid
        return g

    def hess(beta):
        h = ridge * np.eye(k)
        for a, b in pairs:
            p = 1.0 / (1.0 + np.exp(-(beta[a] - beta[b])))
            w = p * (1 - p)
            h[a, a] += w
            h[b, b] += w
            h[a, b] -= w
            h[b, a] -= w
        return h

    res = minimize(neg, np.zeros(k), jac=grad, hess=hess, method="trust-exact")
    # polish: the objective is strictly convex, so its optimum is the unique root of the gradient
    sol = root(grad, res.x, jac=hess, tol=1e-14)
    assert np.abs(grad(sol.x)).max() < 1e-10, sol
    return sol.x - sol.x.mean()


def _random_prob(rng, k=6, low=0.05, high=0.95):
    prob = np.full((k, k), 0.5)
    for a, b in itertools.combinations(range(k), 2):
        prob[a, b] = rng.uniform(low, high)
        prob[b, a] = 1 - prob[a, b]
    return prob


def test_pairs_of_lists_all_unordered_pairs():
    assert pairs_of(6).tolist() == [list(p) for p in itertools.combinations(range(6), 2)]


def test_btl_matrix_is_complementary_with_half_diagonal():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(3, 4, 6))
    prob = btl_matrix(scores, scale=1.7)
    assert prob.shape == (3, 4, 6, 6)
    np.testing.assert_allclose(prob + np.swapaxes(prob, -1, -2), 1.0, atol=1e-15)
    np.testing.assert_allclose(np.diagonal(prob, axis1=-2, axis2=-1), 0.5)
    np.testing.assert_allclose(
        prob[1, 2, 0, 3], 1 / (1 + np.exp(-1.7 * (scores[1, 2, 0] - scores[1, 2, 3])))
    )


def test_sigmoid_is_stable_for_large_arguments():
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0])
    out = sigmoid(x)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [0.0, 1 / (1 + np.exp(30)), 0.5, 1 / (1 + np.exp(-30)), 1.0])


def test_the_scalar_sigmoid_is_the_same_function():
    x = np.random.default_rng(0).normal(scale=20.0, size=2000)
    x[:3] = (-800.0, 0.0, 800.0)
    scalar = np.array([sigmoid_scalar(float(v)) for v in x])
    np.testing.assert_allclose(scalar, sigmoid(x), rtol=1e-15, atol=0)
    assert sigmoid_scalar(-700.0) == pytest.approx(math.exp(-700.0), rel=1e-15)  # no underflow


def test_top_two_is_best_first_with_ties_to_the_lower_index():
    assert top_two(np.array([0.1, 0.9, 0.3, 0.95, -1.0])) == (3, 1)
    assert top_two(np.array([2.0, 2.0, 1.0])) == (0, 1)
    assert top_two(np.array([1.0, 2.0, 2.0])) == (1, 2)
    assert set(top_two(np.array([0.0, 1.0, 2.0]))) == {1, 2}  # numpy integers, hashable
    scores = np.array([5.0, 1.0])
    top_two(scores)
    np.testing.assert_array_equal(scores, [5.0, 1.0])  # input not modified


def test_top_two_works_along_the_last_axis():
    scores = np.random.default_rng(3).normal(size=(4, 5, 6))
    scores[0, 0] = [1.0, 3.0, 3.0, 0.0, 3.0, 2.0]
    best, second = top_two(scores)
    assert best.shape == second.shape == (4, 5)
    for idx in np.ndindex(4, 5):
        assert (best[idx], second[idx]) == top_two(scores[idx])
    assert (best[0, 0], second[0, 0]) == (1, 2)


@pytest.mark.parametrize("bad", [np.float64(1.0), np.array([1.0]), np.zeros((3, 1))])
def test_top_two_needs_two_scores(bad):
    with pytest.raises(ValueError, match="at least two"):
        top_two(bad)


def test_fit_recovers_scores_from_exact_btl_probabilities():
    rng = np.random.default_rng(1)
    truth = rng.normal(size=(20, 6))
    truth -= truth.mean(axis=1, keepdims=True)
    fitted = fit_bt_ridge(btl_matrix(truth), ridge=1e-8)
    np.testing.assert_allclose(fitted, truth, atol=1e-5)


@pytest.mark.parametrize("ridge", [0.01, 0.3, 2.0])
def test_fit_matches_scipy_on_the_documented_objective(ridge):
    rng = np.random.default_rng(2)
    probs = np.stack([_random_prob(rng) for _ in range(6)]).reshape(2, 3, 6, 6)
    fitted = fit_bt_ridge(probs, ridge=ridge)
    assert fitted.shape == (2, 3, 6)
    np.testing.assert_allclose(fitted.mean(axis=-1), 0.0, atol=1e-12)
    for idx in np.ndindex(2, 3):
        np.testing.assert_allclose(
            fitted[idx], _bt_objective_reference(probs[idx], ridge), atol=1e-7
        )


def test_fit_reads_only_the_upper_triangle():
    rng = np.random.default_rng(3)
    prob = _random_prob(rng)
    garbage = prob.copy()
    garbage[np.tril_indices(6, -1)] = rng.random(15)
    np.testing.assert_array_equal(fit_bt_ridge(prob), fit_bt_ridge(garbage))


def test_fit_is_permutation_equivariant():
    rng = np.random.default_rng(4)
    prob = _random_prob(rng)
    perm = rng.permutation(6)
    np.testing.assert_allclose(
        fit_bt_ridge(prob[np.ix_(perm, perm)]), fit_bt_ridge(prob)[perm], atol=1e-12
    )


@pytest.mark.parametrize("ridge", [0.0, -1.0])
def test_fit_rejects_non_positive_ridge(ridge):
    with pytest.raises(ValueError, match="ridge"):
        fit_bt_ridge(np.full((6, 6), 0.5), ridge=ridge)


def test_fit_converges_for_extreme_probabilities():
    """Score spreads of ~15 logits (P down to ~1e-7) still reach the optimum in 12 steps."""
    rng = np.random.default_rng(0)
    truth = 4.0 * rng.normal(size=(30, 6))
    truth -= truth.mean(axis=1, keepdims=True)
    prob = btl_matrix(truth)
    assert prob.min() < 1e-6
    fitted = fit_bt_ridge(prob, ridge=0.01)
    for m in range(truth.shape[0]):
        np.testing.assert_allclose(fitted[m], _bt_objective_reference(prob[m], 0.01), atol=1e-9)


# ---------------------------------------------------------------- regret


def _utilities(seed=0, shape=(4, 5, 6)):
    u = np.random.default_rng(seed).random(shape)
    u[0, 0] = [0.9, 0.9, 0.1, 0.2, 0.3, 0.4]  # tie for best: floor 0
    u[0, 1] = 0.5  # all equal: every pair has regret 0
    return u


def test_pair_regret_matches_a_loop():
    u = _utilities()
    rng = np.random.default_rng(5)
    first = rng.integers(0, 6, size=u.shape[:-1])
    second = (first + rng.integers(1, 6, size=u.shape[:-1])) % 6
    got = pair_regret(u, first, second)
    for idx in np.ndindex(*u.shape[:-1]):
        row = u[idx]
        assert got[idx] == pytest.approx(
            2 * max(row) - row[first[idx]] - row[second[idx]], abs=1e-15
        )


def test_floor_regret_is_the_best_pair_found_by_brute_force():
    u = _utilities()
    got = floor_regret(u)
    for idx in np.ndindex(*u.shape[:-1]):
        row = u[idx]
        best = min(2 * max(row) - row[i] - row[j] for i, j in itertools.combinations(range(6), 2))
        assert got[idx] == pytest.approx(best, abs=1e-15)
    assert got[0, 0] == 0.0
    assert got[0, 1] == 0.0


def test_random_regret_is_the_mean_over_all_ordered_distinct_pairs():
    u = _utilities()
    got = random_regret(u)
    for idx in np.ndindex(*u.shape[:-1]):
        row = u[idx]
        regrets = [2 * max(row) - row[i] - row[j] for i, j in itertools.permutations(range(6), 2)]
        assert len(regrets) == 30
        assert got[idx] == pytest.approx(sum(regrets) / len(regrets), abs=1e-14)


def test_random_regret_for_other_k():
    u = np.random.default_rng(6).random((7, 3))
    for row, got in zip(u, random_regret(u), strict=True):
        regrets = [2 * max(row) - row[i] - row[j] for i, j in itertools.permutations(range(3), 2)]
        assert got == pytest.approx(np.mean(regrets), abs=1e-15)


def test_score_anchors_and_linearity():
    r_rand, g = 37.5, 12.25
    assert score(r_rand, r_rand, g) == 0.0
    assert score(g, r_rand, g) == 100.0
    assert score((r_rand + g) / 2, r_rand, g) == pytest.approx(50.0)
    assert score(r_rand + (r_rand - g), r_rand, g) == pytest.approx(-100.0)  # worse than random


@pytest.mark.parametrize(("r_rand", "g"), [(5.0, 5.0), (4.0, 5.0)])
def test_score_undefined_when_random_equals_floor(r_rand, g):
    with pytest.raises(ValueError, match="undefined"):
        score(1.0, r_rand, g)


def test_sigmoid_is_the_two_sided_formula_to_the_bit():
    """``1 / (1 + exp(-x))`` for ``x >= 0`` and ``exp(x) / (1 + exp(x))`` below, computed on
    each side alone: worlds are generated with it, so its bits are fixed."""
    rng = np.random.default_rng(7)
    for n in (1, 7, 17, 24001):
        x = rng.normal(scale=rng.choice([0.1, 3.0, 40.0, 800.0]), size=n)
        x[: min(n, 3)] = [0.0, -0.0, 5.0][: min(n, 3)]
        want = np.empty(n)
        pos = x >= 0
        want[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
        ex = np.exp(x[~pos])
        want[~pos] = ex / (1.0 + ex)
        np.testing.assert_array_equal(sigmoid(x), want)
    np.testing.assert_array_equal(sigmoid([-np.inf, np.inf]), [0.0, 1.0])
    assert np.isnan(sigmoid(np.nan))
    assert sigmoid(0.3).shape == ()
