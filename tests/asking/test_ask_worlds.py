"""Worlds that can be asked: the published answer model, the ask tracks, the runner's loop."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pb_toys import make_world
from prefduel.cli.main import main
from prefduel.core.errors import PolicyError, SpecError, WorldFormatError
from prefduel.policies.base import Policy
from prefduel.runner.cell import play, run_cell
from prefduel.worlds import get_world, load_world, parse_world, world_label
from prefduel.worlds.asking import AskQuestion, answer_bank, level_gap


@pytest.fixture(scope="module")
def dev():
    return get_world("dev", 0)


def test_a_tutorsim_world_carries_a_public_bank_and_hidden_answers(dev):
    bank = dev.asks
    kinds = [q.kind for q in bank.questions]
    assert kinds.count("level") == 8 and kinds.count("pair") == 15 and kinds.count("least") == 3
    assert bank.answers.shape == (dev.N, 26)
    assert np.array_equal(get_world("dev", 0).asks.answers, bank.answers)  # seeded
    assert not np.array_equal(get_world("dev", 1).asks.answers, bank.answers)


def test_answers_follow_the_published_model():
    """Noise-free limits: answers agree with the hidden utilities; pure noise: uniform."""
    rng = np.random.default_rng(0)
    v = rng.normal(size=(4000, 6))
    questions = [
        AskQuestion("pair:0-1", "pair", "?", pair=(0, 1)),
        AskQuestion("level:x", "level", "?", loadings=(1, 0, 0, 0, 0, -1)),
        AskQuestion("least:why", "least", "?", about="why"),
    ]
    sharp = answer_bank(questions, v, {"why": v}, beta=1.0, noise=1e-6, rng=rng)
    assert np.array_equal(sharp[:, 0], (v[:, 0] > v[:, 1]).astype(int))
    gap = level_gap(v, np.array([1, 0, 0, 0, 0, -1.0]))
    assert np.all(sharp[gap > 1e-3, 1] == 4) and np.all(sharp[gap < -1e-3, 1] == 0)
    assert np.array_equal(sharp[:, 2], v.argmin(axis=1))
    noisy = answer_bank(questions, v, {"why": v}, beta=1.0, noise=1e6, rng=rng)
    assert abs(noisy[:, 0].mean() - 0.5) < 0.03
    chance = 1 / (1 + np.exp(-(v[:, 0] - v[:, 1])))  # noise 1: a click's
    one = answer_bank(questions[:1], v, {}, beta=1.0, noise=1.0, rng=rng)[:, 0]
    assert abs(one.mean() - chance.mean()) < 0.03


def test_the_answer_noise_is_a_roster_setting(tmp_path):
    path = tmp_path / "noisy.yaml"
    path.write_text("base: dev\narrivals: 40\nparams: {answer_noise: 2.0}\n")
    world = get_world(str(path), 0)
    assert world.asks.noise == 2.0 and world.info["params"]["answer_noise"] == 2.0


def test_an_ask_track_is_a_world_of_its_own(dev):
    assert world_label("dev+ask2") == "dev+ask2" and world_label("dev+ask0") == "dev"
    spec = parse_world("dev+ask3")
    assert spec.ask_budget == 3 and spec.label == "dev+ask3"
    world = spec.make(0)
    assert world.ask_budget == 3 and world.name == "dev+ask3"
    assert world.digest() == dev.digest()  # the same arrays: only the questions are new
    with pytest.raises(SpecError, match="at most 100"):
        parse_world("dev+ask1000")


def test_a_world_without_questions_has_no_ask_track(tmp_path):
    path = make_world(0).save(tmp_path / "plain")
    with pytest.raises(WorldFormatError, match="has no preference questions, so it has no ask"):
        get_world(f"{path}+ask2", 0)


def test_answers_are_stored_and_follow_a_replicate_arrivals(dev, tmp_path):
    path = dev.save(tmp_path / "w")
    stored = load_world(path)
    assert np.array_equal(stored.asks.answers, dev.asks.answers)
    assert stored.asks.questions == dev.asks.questions
    replica = get_world(str(path), 7)
    students = (stored.students[i] for i in replica.student_index)
    order = [int(s["id"].split("#")[1]) for s in students]
    assert np.array_equal(replica.asks.answers, dev.asks.answers[order])


class _Asker(Policy):
    name = "asker"

    def __init__(self, asks=(0, 8, 23), bad=None):
        self.asks, self.bad = asks, bad

    def reset(self, rng, context):
        super().reset(rng, context)
        self.context_seen = dict(context)
        self.answers = []

    def start_student(self):
        self.queue = list(self.asks)

    def ask(self):
        if self.bad is not None:
            return self.bad
        return self.queue.pop(0) if self.queue else None

    def answer(self, question, value):
        self.answers.append((question, value))

    def select(self, Phi):
        return 0, 1


def test_a_policy_spends_its_budget_and_hears_the_stored_answers(dev):
    world = parse_world("dev+ask2").make(0)
    policy = _Asker()
    traj = play(world, policy, np.random.default_rng(0))
    assert len(traj.asked) == 2 * world.N  # the third question is over the budget
    assert all(r == 0 for _, r, _ in traj.asked)
    first = dev.asks.answers[0]
    assert policy.answers[:2] == [(0, int(first[0])), (8, int(first[8]))]
    assert policy.context_seen["ask_budget"] == 2 and len(policy.context_seen["questions"]) == 26


def test_without_a_track_nothing_changes(dev):
    policy = _Asker()
    traj = play(dev, policy, np.random.default_rng(0))
    assert traj.asked == [] and policy.answers == []
    assert "ask_budget" not in policy.context_seen and "questions" not in policy.context_seen
    clicks_only = run_cell(dev, "notransfer")
    on_track = run_cell(parse_world("dev+ask5").make(0), "notransfer")
    assert on_track["asked"] == 0
    assert on_track["score"] == clicks_only["score"]
    assert on_track["excess_per_arrival"] == clicks_only["excess_per_arrival"]


@pytest.mark.parametrize(
    ("bad", "message"), [(99, "outside 0..25"), (1.5, "question index or None")]
)
def test_a_bad_question_is_a_named_error(bad, message):
    world = dataclasses.replace(get_world("dev", 0), ask_budget=1)
    with pytest.raises(PolicyError, match=f"arrival 0: ask\\(\\) .*{message}"):
        play(world, _Asker(bad=bad), np.random.default_rng(0))


def test_run_takes_ask_tracks(tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    argv = ["run", "--worlds", "dev", "--seeds", "0", "--policies", "random", "--ask-budget",
            "0,2", "--jobs", "1", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "world: dev (" in text and "world: dev+ask2 (" in text
    assert main([*argv[:-2], "--ask-budget", "1,x", "--out", str(out)]) == 2
    assert "--ask-budget: 'x' is not a number of questions" in capsys.readouterr().err
