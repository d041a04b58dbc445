"""Policies that ask: the Policy API's ask/answer contract and notransfer-ask."""

from __future__ import annotations

import numpy as np
import pytest

from prefduel.core.errors import PolicyError
from prefduel.policies import POLICIES
from prefduel.policies.asking import level_direction, question_clicks
from prefduel.policies.base import Policy, check_policy
from prefduel.runner.cell import play, run_cell
from prefduel.worlds import parse_world
from prefduel.worlds.asking import level_gap


def test_a_level_answers_pseudo_click_measures_the_answer_models_gap():
    rng = np.random.default_rng(0)
    loadings = rng.normal(size=6)
    theta = rng.normal(size=6)  # the learner's persona weights, in click logits
    z = level_direction(loadings)
    assert theta @ z == pytest.approx(level_gap(theta[None, :], loadings)[0])


@pytest.mark.parametrize(
    ("answer", "clicks"), [(0, [0, 0]), (1, [0]), (2, []), (3, [1]), (4, [1, 1])]
)
def test_level_answers_are_zero_one_or_two_clicks(answer, clicks):
    question = {"kind": "level", "loadings": [1, 0, 0, 0, 0, -1]}
    assert [y for _, y in question_clicks(question, answer, 6, 7)] == clicks


def test_pair_and_least_answers():
    (z, y), = question_clicks({"kind": "pair", "pair": [1, 4]}, 0, 6, 7)
    assert y == 0 and z[1] == 1 and z[4] == -1 and z[6] == 0
    (z, y), = question_clicks({"kind": "least", "about": "why"}, 2, 6, 7)
    assert y == 0 and z[2] == 1 and z[:6].sum() == pytest.approx(0)


def test_notransfer_ask_spends_its_budget_at_the_start_of_each_session():
    world = parse_world("dev+ask3").make(0)
    traj = play(world, POLICIES.make("notransfer-ask"), np.random.default_rng(0))
    assert len(traj.asked) == 3 * world.N
    assert {r for _, r, _ in traj.asked} == {0}
    per_user = [[q for n, _, q in traj.asked if n == a] for a in range(world.N)]
    assert all(len(set(qs)) == 3 for qs in per_user)  # no question asked twice


def test_notransfer_ask_learns_from_its_answers():
    """On dev, two questions per user lower notransfer's excess regret (two seeds)."""
    clicks = [run_cell(parse_world("dev").make(s), "notransfer")["excess"] for s in (0, 1)]
    asked = [run_cell(parse_world("dev+ask2").make(s), "notransfer-ask")["excess"] for s in (0, 1)]
    assert all(a < 0.95 * c for a, c in zip(asked, clicks, strict=True))


class _Asks(Policy):
    name = "asks"

    def __init__(self, ret=None):
        self.ret = ret

    def ask(self):
        return self.ret

    def answer(self, question, value):
        pass

    def select(self, Phi):
        return 0, 1


class _AsksWithoutAnswer(Policy):
    name = "asks-no-answer"

    def ask(self):
        return None

    def select(self, Phi):
        return 0, 1


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (lambda: _Asks(ret=99), "ask\\(\\) returned 99, outside 0..14"),
        (lambda: _Asks(ret="x"), "ask\\(\\) must return a question index or None"),
        (_AsksWithoutAnswer, "has ask\\(\\) but no callable answer\\(\\)"),
    ],
)
def test_check_policy_checks_the_ask_contract(policy, message):
    with pytest.raises(PolicyError, match=message):
        check_policy(policy)


def test_notransfer_ask_passes_the_contract_on_an_ask_track():
    check_policy(lambda: POLICIES.make("notransfer-ask"))
