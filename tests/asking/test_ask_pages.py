"""The pages on an ask track: the play page's preference questions (a policy's or picked from
the bank, answered with a button per answer), and the replay page's questions and answers."""

from __future__ import annotations

import pytest

from prefduel.cli.main import main
from prefduel.core.errors import SpecError
from prefduel.pages import play_data, play_page, replay_data
from prefduel.pages.asks import LEVEL_ANSWERS, ask_cards, policy_questions
from prefduel.runner import run_cell
from prefduel.worlds import parse_world

TINY = "base: dev\narrivals: 40\n"


@pytest.fixture(scope="module")
def track(tmp_path_factory):
    """A 40-arrival dev roster on the ask track B = 2, seed 0."""
    roster = tmp_path_factory.mktemp("pages") / "tiny.yaml"
    roster.write_text(TINY, encoding="utf-8")
    return parse_world(f"{roster}+ask2").make(0)


def test_each_kind_of_question_has_a_button_per_answer(track):
    cards = {c["kind"]: c for c in ask_cards(track)}
    assert [o["label"] for o in cards["level"]["options"]] == list(LEVEL_ANSWERS)
    pair = cards["pair"]
    a, b = track.asks.questions[pair["index"]].pair
    assert [(o["value"], o["persona"]) for o in pair["options"]] == [(1, a), (0, b)]
    assert [o["value"] for o in cards["least"]["options"]] == list(range(track.K))


def test_free_play_offers_the_bank_and_the_students_stored_answers(track):
    ask = play_data(track, 5)["ask"]
    assert ask["budget"] == 2 and ask["fixed"] is None and ask["policy"] is None
    assert len(ask["questions"]) == len(track.asks.questions)
    assert ask["stored"] == track.asks.answers[5].tolist()


def test_the_play_page_shows_the_questions_the_policy_asked(track):
    run = run_cell(track, "notransfer-ask", keep_trajectory=True)["trajectory"]
    asked = policy_questions(track, "notransfer-ask", 7)
    assert asked == [(r, q) for n, r, q in run.asked if n == 7]
    assert len(asked) == 2
    data = play_data(track, 7, asked=asked, policy="notransfer-ask")
    assert data["ask"]["fixed"] == [list(x) for x in asked]
    html = play_page(track, 7, asked=asked, policy="notransfer-ask")
    assert "notransfer-ask asked this student 2 questions" in html


def test_a_world_without_a_track_has_no_questions(track):
    plain = parse_world("dev").make(0)
    assert play_data(plain, 0)["ask"] is None
    assert 'data-testid="ask"' not in play_page(plain, 0)
    with pytest.raises(SpecError, match="has no ask track"):
        policy_questions(plain, "notransfer-ask", 0)


def test_replay_shows_the_questions_asked_and_the_stored_answers(track):
    row = run_cell(track, "notransfer-ask", keep_trajectory=True)
    traj = row.pop("trajectory")
    ask = replay_data(track, row, traj)["ask"]
    assert ask["budget"] == 2 and len(ask["asked"]) == track.N
    for n, r, q in traj.asked:
        entry = next(a for a in ask["asked"][n] if ask["questions"][a[1]]["index"] == q)
        assert entry[0] == r and entry[2] == int(track.asks.answers[n, q])
    assert sum(len(a) for a in ask["asked"]) == len(traj.asked) == 2 * track.N


def test_play_command_on_an_ask_track(tmp_path, capsys, track):
    out = tmp_path / "p.html"
    argv = ["play", "--world", track.name, "--arrival", "2", "--out", str(out)]
    assert main([*argv, "--policy", "notransfer-ask"]) == 0
    assert "preference questions first (the 2 questions notransfer-ask asked)" in (
        capsys.readouterr().out
    )
    assert '"policy":"notransfer-ask"' in out.read_text() and '"fixed":[[0,' in out.read_text()
    assert main(["play", "--world", "dev", "--policy", "notransfer-ask", "--out", str(out)]) == 2
    assert "has no ask track" in capsys.readouterr().err
