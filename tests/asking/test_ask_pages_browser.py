"""The ask track's pages in headless Chromium: answer a policy's questions and then duel,
pick questions in free play, download the answers, and replay the questions a policy asked.

Skipped like ``tests/pages/test_pages_browser.py`` when Playwright or ``/usr/bin/chromium`` is
missing, unless ``PREFDUEL_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from pb_browser import needs_chromium
from prefduel.pages import play_page, replay_page, session_score
from prefduel.pages.asks import policy_questions
from prefduel.runner import run_cell
from prefduel.worlds import World, parse_world

ARRIVAL = 4

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def track(tmp_path_factory) -> World:
    roster = tmp_path_factory.mktemp("askpages") / "tiny.yaml"
    roster.write_text("base: dev\narrivals: 40\n", encoding="utf-8")
    return parse_world(f"{roster}+ask2").make(0)


def _open(tab: Any, tmp_path: Path, html: str) -> None:
    path = tmp_path / "page.html"
    path.write_text(html, encoding="utf-8")
    tab.goto(path.as_uri())


def _download(tab: Any) -> dict[str, Any]:
    href = tab.get_by_test_id("ask-download").get_attribute("href")
    return json.loads(urllib.parse.unquote(href.split(",", 1)[1]))


def test_answer_the_policys_questions_then_duel(page, track, tmp_path):
    asked = policy_questions(track, "notransfer-ask", ARRIVAL)
    _open(page, tmp_path, play_page(track, ARRIVAL, asked=asked, policy="notransfer-ask"))
    tid = page.get_by_test_id
    cards = tid("ask-question")
    assert cards.count() == 2 and tid("confirm").is_hidden() and tid("ask-done").is_disabled()
    assert tid("persona-0").is_disabled()  # no duel before the questions are answered
    page.keyboard.press("2")  # the first question, by its second answer button
    cards.nth(1).get_by_test_id("ask-option").first.click()
    values = []
    for k, (_, q) in enumerate(asked):
        card = cards.nth(k)
        assert card.get_attribute("data-question") == track.asks.questions[q].id
        assert int(card.get_attribute("data-stored")) == int(track.asks.answers[ARRIVAL, q])
        options = card.get_by_test_id("ask-option")
        chosen = options.nth(1 if k == 0 else 0)
        assert chosen.get_attribute("aria-pressed") == "true"
        values.append(int(chosen.get_attribute("data-value")))
        assert int(card.get_attribute("data-answer")) == values[-1]
    record = _download(page)
    assert [a["answer"] for a in record["answers"]] == values
    assert [a["stored"] for a in record["answers"]] == [
        int(track.asks.answers[ARRIVAL, q]) for _, q in asked
    ]
    page.keyboard.press("Enter")
    assert tid("ask-done").is_hidden() and tid("ask-option").first.is_disabled()
    page.keyboard.press("1")
    page.keyboard.press("3")
    tid("confirm").click()
    expected = session_score(track, ARRIVAL, [(0, 2)])
    assert int(tid("click").get_attribute("data-winner")) == expected["winners"][0]
    assert tid("score").inner_text() == f"{expected['running_scores'][0]:.1f}"
    tid("next").click()
    assert tid("round").inner_text() == "2 / 24"
    assert tid("ask-question").count() == 2  # the answers stay on the page, as a record


def test_free_play_picks_up_to_the_budget(page, track, tmp_path):
    _open(page, tmp_path, play_page(track, ARRIVAL))
    tid = page.get_by_test_id
    bank = tid("ask-pick")
    assert bank.count() == len(track.asks.questions)
    assert tid("ask-done").is_enabled()  # asking nothing is allowed
    level = page.locator("[data-testid=ask-pick][data-question^='level:']").first
    level.click()
    assert tid("ask-done").is_disabled()
    assert tid("ask-question").first.get_by_test_id("ask-option").count() == 5
    page.keyboard.press("5")
    page.locator("[data-testid=ask-pick][data-question^='least:']").first.click()
    options = tid("ask-question").nth(1).get_by_test_id("ask-option")
    assert options.count() == track.K
    options.nth(2).click()
    assert tid("ask-pick").count() == 0  # the budget is spent
    answers = [a["answer"] for a in _download(page)["answers"]]
    assert answers == [4, 2]
    tid("ask-done").click()
    assert tid("confirm").is_visible()


def test_replay_shows_the_questions_and_stored_answers(page, track, tmp_path):
    row = run_cell(track, "notransfer-ask", keep_trajectory=True)
    traj = row.pop("trajectory")
    _open(page, tmp_path, replay_page(track, row, traj, arrival=ARRIVAL))
    tid = page.get_by_test_id
    rows = tid("ask-row")
    mine = [(r, q) for n, r, q in traj.asked if n == ARRIVAL]
    assert rows.count() == len(mine) == 2
    for k, (r, q) in enumerate(mine):
        assert int(rows.nth(k).get_attribute("data-round")) == r
        assert rows.nth(k).get_attribute("data-question") == track.asks.questions[q].id
        assert int(rows.nth(k).get_attribute("data-answer")) == int(track.asks.answers[ARRIVAL, q])
    assert tid("asked").inner_text() == "Asked 2 of up to 2 preference questions"
    tid("next").click()
    assert int(tid("ask-row").first.get_attribute("data-answer")) == int(
        track.asks.answers[ARRIVAL + 1, next(q for n, _, q in traj.asked if n == ARRIVAL + 1)]
    )
