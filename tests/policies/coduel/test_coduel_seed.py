"""``coduel-seed``: CODuel with every setting as the seed paper states it (full refit after each
session, A fitted on every completed session's clicks, first after 20 sessions and refitted
every 10, used as fitted), registered beside the default ``coduel``."""

from __future__ import annotations

import numpy as np

from prefduel.policies import POLICIES, check_policy, load_policy
from prefduel.policies.coduel import CODuel
from prefduel.runner.cell import play
from prefduel.worlds import get_world
from prefduel.worlds.world import World

#: What the seed paper states, written out here (not read from the code under test).
PAPER = {
    "alpha": 20.0,  # isotropic weight >= alpha / (alpha + n)
    "components": 16,  # at most 16 learned components
    "z": 0.5,  # gate threshold
    "nmin": 8,  # sessions before the gate may open
    "bank": 16,  # question bank of the lookahead
    "ridge": 10.0,  # ridge on A'
    "recal_first": 20,  # A first fitted after 20 sessions
    "recal_every": 10,  # ... and refitted every 10
    "recal_growth": 0.0,  # every 10, not a growing gap
    "recal_window": 0,  # on all choices of the completed sessions
    "recal_scale": False,  # A used as fitted (the rescale is ours)
    "em": "full",  # the mixture refitted after each session
    "pair": "kg",  # regret now + expected greedy regret after the click
    "population": True,
    "recal": True,
    "gate": True,
    "split": False,  # no split move in the paper
    "birth_margin": 0.0,  # births by the paper's rule
}


def test_the_registered_instance_has_the_papers_settings():
    policy = POLICIES.make("coduel-seed")
    assert isinstance(policy, CODuel)
    assert policy.name == "coduel-seed"
    assert {key: getattr(policy, key) for key in PAPER} == PAPER


def test_the_default_coduel_keeps_its_own_schedule():
    policy = load_policy("coduel")
    assert (policy.em, policy.recal_growth, policy.recal_window) == ("incremental", 0.1, 1000)


def test_a_spec_can_still_change_a_setting():
    policy = load_policy("coduel-seed:gate=off")
    assert policy.gate is False and policy.em == "full"


def _world(n: int) -> World:
    full = get_world("dev", 0)
    fields = ("Phi", "U", "P", "u", "student_index", "question_index")
    return World(
        roster=full.roster,
        seed=full.seed,
        questions=full.questions,
        personas=full.personas,
        **{name: getattr(full, name)[:n] for name in fields},
    )


def test_recalibration_first_at_20_then_every_10_on_every_user(monkeypatch):
    refits: list[tuple[int, range]] = []
    original = CODuel._refit_recalibration

    def spy(self):
        refits.append((self.n_sessions, self._window()))
        original(self)

    monkeypatch.setattr(CODuel, "_refit_recalibration", spy)
    policy = load_policy("coduel-seed:bank=2")  # a small bank keeps the test fast
    play(_world(41), policy, np.random.default_rng(0), label="coduel-seed")
    assert [n for n, _ in refits] == [20, 30, 40]
    assert all(window == range(n) for n, window in refits)  # every completed user
    assert policy.matrix is not None


def test_coduel_seed_passes_check_policy():
    check_policy(lambda: load_policy("coduel-seed:nmin=2,z=0"))
