"""The "be the policy" page: session_score, the embedded data, and ``prefduel play``."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from pb_toys import make_world
from prefduel.cli.main import main
from prefduel.core.errors import SpecError
from prefduel.core.regret import floor_regret, pair_regret, random_regret, score
from prefduel.pages import play_data, play_page, play_widget, session_baselines, session_score
from prefduel.policies import Policy
from prefduel.runner import play
from prefduel.worlds import World, get_world

#: A varied session: both listing orders, repeats, and the same pair in both orders.
PAIRS = [
    (0, 1), (1, 0), (5, 2), (2, 5), (3, 4), (4, 3), (0, 5), (5, 0), (1, 3), (4, 2), (2, 0),
    (3, 1), (5, 4), (0, 3), (4, 1), (2, 3), (1, 5), (3, 0), (0, 4), (5, 3), (2, 1), (4, 5),
    (1, 2), (3, 2),
]  # fmt: skip


@pytest.fixture(scope="module")
def toy() -> World:
    return make_world(seed=3)


@pytest.fixture(scope="module")
def dev() -> World:
    return get_world("dev", 0)


def embedded(fragment: str, element_id: str) -> dict:
    """The JSON a widget embeds under ``<script id=ELEMENT_ID-data>``."""
    match = re.search(
        rf'<script type="application/json" id="{element_id}-data">(.*?)</script>', fragment, re.S
    )
    assert match, "no embedded data"
    return json.loads(match.group(1))


class Scripted(Policy):
    """Shows ``pairs`` to arrival ``arrival`` (and 0, 1 to everyone else); records clicks."""

    name = "scripted"

    def __init__(self, arrival: int, pairs: list[tuple[int, int]]) -> None:
        self.arrival, self.pairs = arrival, pairs

    def reset(self, rng, context):
        super().reset(rng, context)
        self.n = -1

    def start_student(self):
        self.n += 1
        self.s = 0

    def select(self, Phi):
        pair = self.pairs[self.s] if self.n == self.arrival else (0, 1)
        self.s += 1
        return pair


# -- session_score ---------------------------------------------------------------------------


@pytest.mark.parametrize("arrival", [0, 7, 11])
def test_clicks_are_the_benchmark_clicks(toy, arrival):
    """The click of every (ordered) pair equals the outcome runner.cell.play records."""
    traj = play(toy, Scripted(arrival, PAIRS), np.random.default_rng(0))
    result = session_score(toy, arrival, PAIRS)
    assert result["clicks"] == traj.outcome[arrival].tolist()
    assert result["pairs"] == list(zip(traj.first[arrival], traj.second[arrival], strict=True))
    for (i, j), y, w in zip(PAIRS, result["clicks"], result["winners"], strict=True):
        assert w == (i if y else j)


def test_listing_order_does_not_change_the_winner(toy):
    forward = session_score(toy, 2, PAIRS)
    backward = session_score(toy, 2, [(j, i) for i, j in PAIRS])
    assert backward["winners"] == forward["winners"]
    assert backward["clicks"] == [1 - y for y in forward["clicks"]]
    assert backward["score"] == pytest.approx(forward["score"], abs=1e-9)


def test_regrets_and_score_match_core_regret(toy):
    arrival = 5
    result = session_score(toy, arrival, PAIRS)
    utilities = toy.U[arrival]
    first = np.array([p[0] for p in PAIRS])
    second = np.array([p[1] for p in PAIRS])
    regrets = pair_regret(utilities, first, second)
    np.testing.assert_array_equal(result["regrets"], regrets)
    np.testing.assert_array_equal(result["floors"], floor_regret(utilities))
    np.testing.assert_allclose(result["random"], random_regret(utilities), rtol=0, atol=1e-15)
    r, g, rand = regrets.sum(), floor_regret(utilities).sum(), random_regret(utilities).sum()
    assert result["R"] == pytest.approx(r, abs=1e-12)
    assert result["G"] == pytest.approx(g, abs=1e-12)
    assert result["R_rand"] == pytest.approx(rand, abs=1e-12)
    assert result["score"] == pytest.approx(score(r, rand, g), abs=1e-9)
    assert result["running_scores"][-1] == result["score"]
    # the running score after round s is the score of the first s + 1 rounds
    part = session_score(toy, arrival, PAIRS[:9])
    assert part["rounds"] == 9
    assert result["running_scores"][8] == part["score"]


def test_best_two_score_100_and_random_scores_0_on_average(toy):
    arrival = 4
    best = [tuple(np.argsort(-u)[:2]) for u in toy.U[arrival]]
    top = session_score(toy, arrival, best)
    assert top["score"] == pytest.approx(100.0)
    assert top["best_two"] == [(int(a), int(b)) for a, b in best]
    # every fixed ordered pair in every round: the mean regret is exactly the random regret
    fixed = [
        session_score(toy, arrival, [(i, j)] * toy.S)["R"]
        for i, j in itertools.permutations(range(toy.K), 2)
    ]
    base = session_baselines(toy, arrival)
    assert np.mean(fixed) == pytest.approx(base["R_rand"])
    assert base["best_fixed"]["R"] == pytest.approx(min(fixed))
    assert base["G"] == pytest.approx(top["R"])


def test_session_score_rejects_bad_input(toy):
    with pytest.raises(SpecError, match=r"arrival 12 is out of range .* 0\.\.11"):
        session_score(toy, 12, PAIRS)
    with pytest.raises(ValueError, match="24 rounds, got 25 pairs"):
        session_score(toy, 0, [*PAIRS, (0, 1)])
    with pytest.raises(ValueError, match=r"round 2: .*distinct"):
        session_score(toy, 0, [(0, 1), (1, 2), (3, 3)])
    with pytest.raises(ValueError, match=r"round 0: .*outside 0\.\.5"):
        session_score(toy, 0, [(0, 6)])
    empty = session_score(toy, 0, [])
    assert empty["rounds"] == 0 and empty["score"] is None


# -- the page --------------------------------------------------------------------------------


def test_embedded_data_is_the_world(dev):
    arrival = 3
    data = embedded(play_widget(dev, arrival), "play")
    assert (data["world"], data["seed"], data["arrival"]) == ("dev", 0, 3)
    assert (data["S"], data["K"]) == (dev.S, dev.K)
    assert [p["name"] for p in data["personas"]] == [p["name"] for p in dev.personas]
    assert all(p["short"] and p["short"] in p["prompt"] for p in data["personas"])
    assert len({p["color"] for p in data["personas"]}) == dev.K
    student = dev.students[dev.student_index[arrival]]
    assert data["student"]["name"] == student["name"]
    assert data["student"]["description"] == student["description"]
    for s, rnd in enumerate(data["rounds"]):
        assert rnd["text"] == dev.questions[dev.question_index[arrival, s]]["text"]
        # exact doubles: the page draws the same clicks and regrets as Python
        assert np.array_equal(rnd["U"], dev.U[arrival, s])
        assert np.array_equal(rnd["P"], dev.P[arrival, s])
        assert rnd["u"] == dev.u[arrival, s]
        assert rnd["floor"] == float(floor_regret(dev.U[arrival, s]))
    assert data["baselines"] == session_baselines(dev, arrival)
    assert data == play_data(dev, arrival)


def test_widget_is_scoped_and_self_contained(dev):
    fragment = play_widget(dev, 0, element_id="pb-game")
    assert fragment.startswith('<section id="pb-game"')
    assert fragment.rstrip().endswith("</section>")
    ids = re.findall(r'\bid="([^"]+)"', fragment)
    assert ids[0] == "pb-game" and all(i.startswith("pb-game-") for i in ids[1:])
    classes = " ".join(re.findall(r'\bclass="([^"]+)"', fragment)).split()
    assert classes and all(c.startswith("pb-game-") for c in classes)
    css = re.search(r"<style>(.*?)</style>", fragment, re.S).group(1)
    selectors = [s.strip() for block in re.findall(r"([^{}]+)\{", css) for s in block.split(",")]
    scoped = [s for s in selectors if not s.startswith("@") and not s.startswith("--")]
    assert scoped and all(s.startswith("#pb-game") for s in scoped), scoped
    for attr in ('data-testid="confirm"', 'data-testid="score"', 'data-testid="round"'):
        assert attr in fragment
    for external in ("<link", "src=", "http://", "https://", "@import", "url("):
        assert external not in fragment
    page = play_page(dev, 0)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert '<meta charset="utf-8">' in page


@pytest.mark.parametrize("bad", ["", "1abc", "has space", 'x"y', "a" * 65])
def test_bad_element_id(dev, bad):
    with pytest.raises(SpecError, match="element_id"):
        play_widget(dev, 0, element_id=bad)


def test_metadata_cannot_break_out_of_the_page():
    world = make_world(seed=1)
    evil = "</script><script>alert(1)</script> & <b>"
    world.personas = [{"name": evil, "prompt": evil} for _ in range(world.K)]
    world.questions = [{"id": f"q{i}", "text": evil} for i in range(10)]
    fragment = play_widget(world, 0)
    assert "<script>alert(1)" not in fragment
    assert fragment.count("</script>") == 2  # the data and the code
    data = embedded(fragment, "play")
    assert data["personas"][0]["name"] == evil and data["rounds"][0]["text"] == evil


def test_bare_world_gets_fallback_names():
    data = play_data(make_world(seed=2), 1)
    assert data["personas"][2]["name"] == "Persona 3"
    assert data["rounds"][0]["text"].startswith("q")
    assert data["student"]["name"] == "student-1"


# -- prefduel play ----------------------------------------------------------------------


def test_cli_play_writes_the_page(tmp_path: Path, capsys):
    out = tmp_path / "play.html"
    assert main(["play", "--world", "dev", "--seed", "0", "--arrival", "3", "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    data = embedded(out.read_text(encoding="utf-8"), "play")
    assert (data["world"], data["arrival"]) == ("dev", 3)


def test_cli_play_stored_world(toy_world: str, tmp_path: Path):
    out = tmp_path / "p.html"
    assert main(["play", "--world", toy_world, "--arrival", "11", "--out", str(out)]) == 0
    assert embedded(out.read_text(encoding="utf-8"), "play")["arrival"] == 11


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--arrival", "300"], "arrival 300 is out of range for world 'dev' (it has arrivals"),
        (["--arrival", "-1"], "arrival -1 is out of range"),
        (["--world", "test-topics"], "roster 'test-topics' is a locked held-out roster"),
        (["--world", "nope"], "unknown roster 'nope'"),
    ],
)
def test_cli_play_errors(args, message, tmp_path: Path, capsys):
    out = tmp_path / "play.html"
    assert main(["play", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("prefduel: error: ") and message in err
    assert not out.exists()
