"""coduel-ask: answers as Laplace likelihood terms on mixture beliefs, questions by their value."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

from prefduel.core.answer_model import least_probabilities, level_probabilities
from prefduel.core.laplace import laplace_update
from prefduel.policies import POLICIES
from prefduel.policies.base import check_policy
from prefduel.policies.coduel import answers as model
from prefduel.policies.coduel.belief import likelihood_summaries
from prefduel.runner.cell import play
from prefduel.worlds import parse_world


def _gaussian(d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    return rng.normal(size=d), a @ a.T / d + 0.5 * np.eye(d)


@pytest.mark.parametrize("answer", [0, 1])
def test_a_pair_answer_updates_a_belief_as_the_same_click_would(answer):
    mu, sigma = _gaussian(7, 1)
    z = np.random.default_rng(2).normal(size=7)
    mine_mu, mine_sigma = mu[None].copy(), sigma[None].copy()
    model.observe_answer("pair", z, answer, mine_mu, mine_sigma)
    click_mu, click_sigma = mu[None].copy(), sigma[None].copy()
    laplace_update(click_mu, click_sigma, z, answer)
    np.testing.assert_allclose(mine_mu, click_mu, atol=1e-9)
    np.testing.assert_allclose(mine_sigma, click_sigma, atol=1e-9)


@pytest.mark.parametrize("answer", range(5))
def test_a_level_answers_evidence_is_the_integral_it_approximates(answer):
    """The mode solves the posterior's stationarity and the Laplace evidence is within a few
    percent of the 1-d integral of the ordered-logit likelihood against the prior."""
    mu, sigma = _gaussian(4, 3)
    z = np.array([0.8, -0.5, 0.3, 0.0])
    m, s = float(z @ mu), float(z @ sigma @ z)
    new_mu, new_sigma = mu[None].copy(), sigma[None].copy()
    log_evidence = model.observe_answer("level", z, answer, new_mu, new_sigma)[0]

    def density(u):
        prior = np.exp(-((u - m) ** 2) / (2 * s)) / np.sqrt(2 * np.pi * s)
        return level_probabilities(np.array(u))[answer] * prior

    exact, _ = integrate.quad(density, m - 12 * np.sqrt(s), m + 12 * np.sqrt(s))
    assert np.exp(log_evidence) == pytest.approx(exact, rel=0.05)
    u = float(z @ new_mu[0])
    eps = 1e-5
    slope = (
        np.log(level_probabilities(np.array(u + eps))[answer])
        - np.log(level_probabilities(np.array(u - eps))[answer])
    ) / (2 * eps)
    assert slope - (u - m) / s == pytest.approx(0.0, abs=1e-6)
    assert float(z @ new_sigma[0] @ z) < s  # an answer never widens the belief


def test_a_least_answer_lowers_that_personas_utility():
    utility = model.utility_map(4, 5, np.array([0.2, -0.1, 0.4, 0.0]))
    mu, sigma = np.zeros((1, 5)), np.eye(5)[None].copy()
    log_evidence = model.observe_answer("least", utility, 2, mu, sigma)[0]
    values = utility @ mu[0]
    assert values.argmin() == 2
    draws = np.random.default_rng(4).normal(size=(200_000, 5))
    monte_carlo = least_probabilities(draws @ utility.T)[:, 2].mean()
    assert np.exp(log_evidence) == pytest.approx(monte_carlo, rel=0.1)


def test_a_question_the_answer_says_nothing_about_is_worth_nothing():
    theta = np.random.default_rng(5).normal(size=(4000, 3))
    known = np.array([0.0, 0.0, 0.0])  # every draw gives the same answer distribution
    informative = np.array([2.0, 0.0, 0.0])
    gains = model.information_gain(["pair", "pair"], [known, informative], theta)
    assert gains[0] == pytest.approx(0.0, abs=1e-12)
    assert gains[1] > 0.1


def test_coduel_ask_passes_the_policy_checker():
    check_policy(POLICIES.make("coduel-ask"))
    check_policy(POLICIES.make("coduel-ask:value=decision"))


def test_coduel_ask_asks_its_budget_before_the_first_duel():
    world = parse_world("dev+ask2").make(0)
    traj = play(world, POLICIES.make("coduel-ask"), np.random.default_rng(0))
    assert len(traj.asked) == 2 * world.N
    assert {r for _, r, _ in traj.asked} == {0}
    per_user = [[q for n, _, q in traj.asked if n == a] for a in range(world.N)]
    assert all(len(set(qs)) == 2 for qs in per_user)


def test_answers_never_enter_the_population_summaries():
    """The summary a session adds to the population is that of its clicks alone."""
    world = parse_world("dev+ask3").make(0)
    policy = POLICIES.make("coduel-ask:recal=off")
    policy.reset(np.random.default_rng(0), {"K": world.K, "d": world.d, "S": world.S,
                 "N": world.N, "beta": 1.0, "b": world.S, "ask_budget": 3,
                 "questions": [q.to_json() for q in world.asks.questions]})
    policy.start_student()
    while (q := policy.ask()) is not None:
        policy.answer(q, int(world.asks.answers[0, q]))
    z, y = [], []
    for s in range(world.S):
        i, j = policy.select(world.Phi[0, s])
        won = world.click(0, s, i, j)
        policy.update(won)
        z.append(world.Phi[0, s, i] - world.Phi[0, s, j])
        y.append(won)
    policy.end_student()
    lam, h, _ = likelihood_summaries(np.array(z)[None], np.array(y)[None], policy.prior_var)
    np.testing.assert_allclose(policy.lam[0], lam[0], atol=1e-6)
    np.testing.assert_allclose(policy.h[0], h[0], atol=1e-6)
