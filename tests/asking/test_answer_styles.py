"""PrefDisco's answer styles as answer noise: ``NAME/STYLE`` redraws only a world's answers."""

from __future__ import annotations

import json
from typing import get_args

import numpy as np
import pytest

from pb_toys import make_world
from prefduel.cli.main import main
from prefduel.core.errors import SpecError
from prefduel.prefdisco.config import UserStyle
from prefduel.stats.asking import track_of
from prefduel.worlds import get_world, parse_world, world_kind, world_label
from prefduel.worlds.asking import ANSWER_STYLES, DEFAULT_ANSWER_NOISE

RUN = "run --seeds 0 --policies random --jobs 1 --no-progress".split()


@pytest.fixture(scope="module")
def plain():
    return get_world("dev+ask2", 0)


def test_the_styles_are_prefdiscos_and_terse_is_the_published_default():
    assert set(ANSWER_STYLES) == set(get_args(UserStyle))
    assert ANSWER_STYLES == {"cooperative": 0.5, "terse": DEFAULT_ANSWER_NOISE, "vague": 2.0}


@pytest.mark.parametrize("style", ["cooperative", "vague"])
def test_a_style_redraws_only_the_answers(plain, style):
    world = get_world(f"dev/{style}+ask2", 0)
    assert world.name == f"dev/{style}+ask2" and world.ask_budget == 2
    assert world.digest() == plain.digest()  # clicks, utilities, features: bit for bit
    assert world.students == plain.students and world.questions == plain.questions
    assert world.asks.questions == plain.asks.questions
    assert world.asks.noise == ANSWER_STYLES[style]
    assert world.info["params"]["answer_noise"] == ANSWER_STYLES[style]
    assert not np.array_equal(world.asks.answers, plain.asks.answers)


def test_terse_answers_are_the_published_defaults(plain):
    assert np.array_equal(get_world("dev/terse+ask2", 0).asks.answers, plain.asks.answers)


def test_more_noise_moves_answers_away_from_the_cooperative_ones(tmp_path):
    """The styles share their random draws, so a noisier style changes more answers."""
    roster = tmp_path / "small.yaml"
    roster.write_text("base: dev\narrivals: 60\n")
    answers = {s: get_world(f"{roster}/{s}+ask1", 1).asks.answers for s in ANSWER_STYLES}
    changed = [np.mean(answers[s] != answers["cooperative"]) for s in ("terse", "vague")]
    assert 0 < changed[0] < changed[1]


def test_the_style_is_part_of_the_name_in_either_order():
    for name in ("dev/vague+ask2", "dev+ask2/vague"):
        spec = parse_world(name)
        assert (spec.label, spec.ask_budget, spec.answer_style) == ("dev/vague+ask2", 2, "vague")
        assert world_label(name) == "dev/vague+ask2" and world_kind(name) == "roster"
    assert parse_world("dev/vague").label == "dev/vague"  # B = 0: the answers go unasked
    assert get_world("dev/vague", 0).digest() == get_world("dev", 0).digest()
    assert track_of("dev/vague+ask2") == ("dev/vague", 2)  # a curve of its own in the stats


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("dev/loud+ask2", "'loud' is no answer style; known: cooperative, terse, vague"),
        ("dev/vague/terse+ask1", "one answer style at most"),
    ],
)
def test_a_bad_style_is_a_named_error(name, message):
    with pytest.raises(SpecError, match=message):
        parse_world(name)


def test_a_roster_files_answer_noise_still_works_but_not_with_a_style(tmp_path):
    path = tmp_path / "noisy.yaml"
    path.write_text("base: dev\narrivals: 20\nparams: {answer_noise: 3.0}\n")
    assert get_world(f"{path}+ask1", 0).asks.noise == 3.0
    with pytest.raises(SpecError, match=r"sets params\.answer_noise: 3\.0 .* 'vague'"):
        parse_world(f"{path}/vague+ask1")
    plain = tmp_path / "plain.yaml"
    plain.write_text("base: dev\narrivals: 20\n")
    assert get_world(f"{plain}/cooperative+ask1", 0).asks.noise == 0.5


def test_a_stored_world_cannot_take_a_style(tmp_path, capsys):
    path = get_world("dev", 0).save(tmp_path / "w")
    with pytest.raises(SpecError, match="answers are stored with it"):
        parse_world(f"{path}/vague+ask2")
    plain = make_world(0).save(tmp_path / "plain")
    argv = [*RUN, "--worlds", f"{plain}/terse+ask1", "--out", str(tmp_path / "r.jsonl")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "prefduel: error:" in err and str(plain) in err and "stored with it" in err


def test_result_rows_and_tables_carry_the_style(tmp_path, capsys):
    roster = tmp_path / "small.yaml"
    roster.write_text("base: dev\narrivals: 12\n")
    out = tmp_path / "r.jsonl"
    argv = [*RUN, "--worlds", f"{roster}/vague", "--ask-budget", "0,1", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    label = world_label(str(roster))
    assert f"world: {label}/vague (" in text and f"world: {label}/vague+ask1 (" in text
    worlds = {json.loads(line)["world"] for line in out.read_text().splitlines()}
    assert {f"{label}/vague", f"{label}/vague+ask1"} <= worlds
