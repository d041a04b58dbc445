"""conucb-duel: ConUCB's two ridge regressions and key-term rule, adapted to duels."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.errors import SpecError
from prefduel.policies import POLICIES, check_policy, load_policy
from prefduel.policies.base import policy_context
from prefduel.runner.cell import play
from prefduel.worlds import parse_world

K, D = 6, 7


def _questions() -> list[dict]:
    level = {"id": "level:x", "kind": "level", "text": "?", "loadings": [2, 1, 0, 0, 0, -1]}
    pairs = [
        {"id": f"pair:{a}-{b}", "kind": "pair", "text": "?", "pair": [a, b]}
        for a in range(K)
        for b in range(a + 1, K)
    ]
    return [level, *pairs, {"id": "least:why", "kind": "least", "text": "?", "about": "why"}]


def _policy(budget: int = 2, **settings):
    policy = POLICIES.make("conucb-duel", **settings)
    context = policy_context(3, 24, K, D)
    if budget:
        context.update(ask_budget=budget, questions=_questions())
    policy.reset(np.random.default_rng(0), context)
    policy.start_student()
    return policy


def _ridge(rows, ridge, weight=1.0):
    """``(ridge I + weight sum x x')`` and ``weight sum r x``, written out plainly."""
    m, b = ridge * np.eye(D), np.zeros(D)
    for x, r in rows:
        m += weight * np.outer(x, x)
        b += weight * r * np.asarray(x, dtype=float)
    return m, b


def _pair(a: int, b: int) -> np.ndarray:
    z = np.zeros(D)
    z[a], z[b] = 1.0, -1.0
    return z


def test_an_answer_moves_the_arm_level_estimate_as_conucbs_closed_form_says():
    lam, key_ridge = 0.3, 2.0
    policy = _policy(budget=0, lam=lam, key_ridge=key_ridge)
    policy.questions = _questions()  # answers may arrive on a policy that was told the bank
    rng = np.random.default_rng(1)
    clicks = []
    for outcome in (1, 0, 1):
        phi = rng.normal(size=(K, D))
        i, j = policy.select(phi)
        policy.update(outcome)
        clicks.append((phi[i] - phi[j], 2.0 * outcome - 1.0))
    before = policy.theta.copy()
    pair_03 = 1 + [(a, b) for a in range(K) for b in range(a + 1, K)].index((0, 3))
    pair_24 = 1 + [(a, b) for a in range(K) for b in range(a + 1, K)].index((2, 4))
    policy.answer(pair_03, 1)  # persona 0 over persona 3
    policy.answer(pair_24, 0)  # persona 4 over persona 2
    key_m, key_b = _ridge([(_pair(0, 3), 1.0), (_pair(2, 4), -1.0)], key_ridge)
    key_theta = np.linalg.solve(key_m, key_b)
    m, b = _ridge(clicks, 1.0 - lam, weight=lam)
    theta = np.linalg.solve(m, b + (1.0 - lam) * key_theta)
    assert np.allclose(policy.key_theta, key_theta) and np.allclose(policy.theta, theta)
    assert not np.allclose(before, theta)
    assert policy.theta[0] - policy.theta[3] > before[0] - before[3]  # toward what was said


def test_before_any_click_the_arm_level_estimate_is_the_key_term_estimate():
    policy = _policy()
    q = policy.ask()
    policy.answer(q, 4 if policy.questions[q]["kind"] == "level" else 1)
    assert np.abs(policy.key_theta).max() > 0
    assert np.allclose(policy.theta, policy.key_theta)  # M = (1 - lam) I, b = 0


def test_the_question_asked_most_reduces_the_arm_level_uncertainty():
    """Each question is ConUCB's argmax of |X M^-1 M~^-1 x~|^2 / (1 + x~' M~^-1 x~) over the
    unasked ones (X: the personas' features, centred), recomputed here by brute force."""
    policy = _policy(budget=3)
    features = np.eye(K, D)
    asked = []
    for _ in range(3):
        m_inv, key_inv = np.linalg.inv(policy.m), np.linalg.inv(policy.key_m)
        centred = features - features.mean(axis=0)
        credits = []
        for q, question in enumerate(policy.questions):
            directions = _directions(question)
            values = [
                np.sum((centred @ m_inv @ key_inv @ x) ** 2) / (1 + x @ key_inv @ x)
                for x in directions
            ]
            credits.append(-np.inf if q in asked else float(np.mean(values)))
        q = policy.ask()
        assert q == int(np.argmax(credits))
        asked.append(q)
        policy.answer(q, 0)
    assert policy.ask() is None  # the budget is spent
    assert len(set(asked)) == 3


def _directions(question: dict) -> list[np.ndarray]:
    if question["kind"] == "pair":
        return [_pair(*question["pair"])]
    if question["kind"] == "least":
        out = []
        for p in range(K):
            z = np.zeros(D)
            z[:K] = -1.0 / (K - 1)
            z[p] = 1.0
            out.append(z)
        return out
    loadings = np.asarray(question["loadings"], dtype=float)
    centred = loadings - loadings.mean()
    z = np.zeros(D)
    z[:K] = centred * np.ptp(loadings) / (centred @ centred)
    return [z]


def test_it_asks_only_before_the_first_duel():
    policy = _policy(budget=2)
    policy.select(np.eye(K, D))
    assert policy.ask() is None


def test_without_questions_it_never_asks_and_still_duels():
    policy = _policy(budget=0)
    assert policy.ask() is None
    i, j = policy.select(np.random.default_rng(0).normal(size=(K, D)))
    assert i != j


def test_it_passes_the_contract_and_spends_its_budget_on_an_ask_track():
    check_policy(lambda: load_policy("conucb-duel"))
    world = parse_world("dev+ask2").make(0)
    traj = play(world, load_policy("conucb-duel"), np.random.default_rng(0))
    assert len(traj.asked) == 2 * world.N and {r for _, r, _ in traj.asked} == {0}


@pytest.mark.parametrize("spec", ["conucb-duel:lam=1", "conucb-duel:key_ridge=0"])
def test_settings_are_checked(spec):
    with pytest.raises(SpecError):
        load_policy(spec)
