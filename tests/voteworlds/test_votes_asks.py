"""A world built from a vote log can be asked: an A-or-B question per pair of models and a
least-wanted question per prompt category, each arrival answering from its own utilities by the
published answer model, without changing a single array of the world."""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from pb_votes import write_log
from prefduel.cli.main import main
from prefduel.core.rng import stream
from prefduel.runner.store import ResultsStore
from prefduel.voteworlds import BuildSettings, build_votes_world, world_arrays
from prefduel.worlds import get_world, load_world
from prefduel.worlds.asking import answer_bank
from prefduel.worlds.votes import UTILITY_SCALE, round_categories

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "battles.csv"
#: Digests of the world ``worlds build --from-votes examples/battles.csv`` makes (default
#: settings) at seeds 0 (as stored) and 1, measured before such worlds had questions.
SAMPLE_DIGESTS = {
    0: "5cbbf1c57eae0e6c47669345bc2bd7f6f0cb8137029a2b88641a562509383101",
    1: "9496cc3b27a8bed0612e8cb373d1ece948ceb8873b9e7a760e28a9107763d1c8",
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A world of 40 voters with strong tastes (tau 3 logits) over 6 models, 3 categories."""
    root = tmp_path_factory.mktemp("asks")
    log, _ = write_log(root / "votes.csv", voters=40, categories=3, tau=3.0, seed=5)
    build_votes_world(log, root / "world", BuildSettings(replicates=1, folds=2))
    return root / "world"


def _v_bar_and_kind(world):
    categories = round_categories(world, world.question_index)
    v_bar = world.U.mean(axis=1)
    v_kind = {}
    for name in set(categories.ravel().tolist()):
        mask = (categories == name)[..., None]
        count = mask.sum(axis=1)
        within = (world.U * mask).sum(axis=1) / np.maximum(count, 1)
        v_kind[name] = np.where(count > 0, within, v_bar)
    return v_bar, v_kind


def test_the_bank_asks_each_pair_of_models_and_each_category(folder):
    world = load_world(folder)
    models = [p["id"] for p in world.personas]
    questions = world.asks.questions
    pairs = [q for q in questions if q.kind == "pair"]
    assert [q.pair for q in pairs] == list(combinations(range(6), 2))
    a, b = pairs[0].pair
    assert pairs[0].text == f"Would you rather have {models[a]} or {models[b]}?"
    least = [q for q in questions if q.kind == "least"]
    assert [q.about for q in least] == ["cat-0", "cat-1", "cat-2"]
    assert least[1].text == "For a cat-1 prompt, which model would you want least?"
    assert not [q for q in questions if q.kind == "level"]  # a log knows no styles
    assert world.asks.answers.shape == (world.N, len(questions))
    world.asks.validate(world.N, world.K, "world")  # every answer in its range


@pytest.mark.parametrize("seed", [0, 3])
def test_answers_are_the_published_model_on_the_arrivals_utilities(folder, seed):
    world = get_world(str(folder), seed)
    v_bar, v_kind = _v_bar_and_kind(world)
    again = answer_bank(
        world.asks.questions, v_bar, v_kind, UTILITY_SCALE, 1.0,
        stream(seed, "votes-world", "answers"),
    )
    assert np.array_equal(world.asks.answers, again)


def test_answers_follow_the_utilities(folder):
    world = get_world(str(folder), 1)
    v_bar, v_kind = _v_bar_and_kind(world)
    pairs = [(q, question.pair) for q, question in enumerate(world.asks.questions)
             if question.kind == "pair"]
    gaps = np.stack([v_bar[:, a] - v_bar[:, b] for _, (a, b) in pairs], axis=1)
    first = np.stack([world.asks.answers[:, q] for q, _ in pairs], axis=1) == 1
    clear = np.abs(gaps) * UTILITY_SCALE > 2.0  # a click would agree 88% of the time or more
    assert clear.sum() > 200
    assert np.mean(first[clear] == (gaps[clear] > 0)) > 0.8
    for q, question in enumerate(world.asks.questions):
        if question.kind == "least":
            own = v_kind[question.about]
            picked = own[np.arange(world.N), world.asks.answers[:, q]]
            assert np.mean(picked < own.mean(axis=1)) > 0.8  # the least wanted: below average


def test_the_bank_changes_no_array_of_the_world(folder, tmp_path, monkeypatch):
    log = folder.parent / "votes.csv"
    monkeypatch.setattr(world_arrays, "votes_answers", lambda *args, **kwargs: None)
    build_votes_world(log, tmp_path / "plain", BuildSettings(replicates=1, folds=2))
    for seed in (0, 1, 2):
        plain = get_world(str(tmp_path / "plain"), seed)
        asked = get_world(str(folder), seed)
        assert plain.asks is None and asked.asks is not None
        assert asked.digest() == plain.digest()


def test_the_sample_world_keeps_its_digests(tmp_path):
    build_votes_world(SAMPLE, tmp_path / "sample")
    for seed, digest in SAMPLE_DIGESTS.items():
        assert get_world(str(tmp_path / "sample"), seed).digest() == digest


def test_the_stored_world_round_trips_its_asks_and_seeds_redraw_them(folder):
    stored = json.loads((folder / "world.json").read_text())
    assert len(stored["asks"]["questions"]) == 18 and stored["asks"]["noise"] == 1.0
    world = load_world(folder)
    assert np.array_equal(get_world(str(folder), world.seed).asks.answers, world.asks.answers)
    other = get_world(str(folder), world.seed + 1)
    assert other.asks.questions == world.asks.questions
    assert not np.array_equal(other.asks.answers, world.asks.answers)


def test_an_ask_track_of_a_votes_world_runs_and_plays(folder, tmp_path, capsys):
    results = tmp_path / "r.jsonl"
    run = ["run", "--worlds", f"{folder}+ask2", "--seeds", "0-1", "--policies",
           "notransfer-ask,coduel-ask", "--out", str(results), "--jobs", "1", "--no-progress"]
    assert main(run) == 0
    rows = [r for r in ResultsStore(results).rows() if r["kind"] == "policy"]
    n = load_world(folder).N
    assert sorted((r["policy"], r["seed"], r["asked"]) for r in rows) == [
        (p, s, 2 * n) for p in ("coduel-ask", "notransfer-ask") for s in (0, 1)
    ]
    assert main(["play", "--world", f"{folder}+ask2", "--policy", "notransfer-ask",
                 "--out", str(tmp_path / "play.html")]) == 0
    assert "the 2 questions notransfer-ask asked" in capsys.readouterr().out


def test_a_votes_world_built_without_questions_has_no_ask_track(folder, tmp_path, capsys):
    old = tmp_path / "old"
    old.mkdir()
    for path in folder.rglob("*"):
        target = old / path.relative_to(folder)
        if path.is_dir():
            target.mkdir(exist_ok=True)
        else:
            target.write_bytes(path.read_bytes())
    meta = json.loads((old / "world.json").read_text())
    del meta["asks"]
    (old / "world.json").write_text(json.dumps(meta))
    assert get_world(str(old), 1).asks is None  # its seeds draw no answers either
    out = str(tmp_path / "r.jsonl")
    assert main(["run", "--worlds", f"{old}+ask2", "--policies", "notransfer-ask",
                 "--seeds", "0", "--out", out, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "no ask track" in err and "build it again with prefduel worlds build --from-votes" in err
