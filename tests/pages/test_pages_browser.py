"""Drive the pages in headless Chromium (Playwright, sync API) and compare them with Python.

Skipped when the ``playwright`` package or ``/usr/bin/chromium`` is missing, unless
``PREFDUEL_REQUIRE_BROWSER=1`` (set by ``.ci/run``): then they fail instead. Playwright never
downloads a browser here: it launches the system Chromium. Set ``PREFDUEL_SCREENSHOTS=1`` to also
write the screenshots to ``/tmp/pb_screens/``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pb_browser import needs_chromium
from prefduel.pages import play_page, play_widget, replay_page, session_score
from prefduel.pages._html import document
from prefduel.runner import run_cell
from prefduel.worlds import World, get_world

pytestmark = needs_chromium

ARRIVAL = 3
#: 24 varied pairs: both listing orders (larger index first too), repeats, the best and worst.
PAIRS = [
    (0, 1), (4, 2), (5, 3), (1, 0), (2, 5), (3, 4), (5, 0), (1, 4), (2, 3), (0, 5), (4, 1),
    (3, 2), (1, 5), (5, 2), (0, 3), (4, 0), (2, 1), (3, 5), (1, 3), (5, 4), (0, 2), (2, 4),
    (4, 3), (3, 0),
]  # fmt: skip
KEYBOARD_ROUND = 6  # this round is picked with the number keys instead of clicks


@pytest.fixture(scope="module")
def dev() -> World:
    return get_world("dev", 0)


def screenshot(tab: Any, tmp_path: Path, name: str) -> Path:
    """Full-page screenshot to ``tmp_path`` (and ``/tmp/pb_screens`` if PREFDUEL_SCREENSHOTS=1)."""
    path = tmp_path / name
    tab.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    if os.environ.get("PREFDUEL_SCREENSHOTS") == "1":
        keep = Path("/tmp/pb_screens")
        keep.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, keep / name)
    return path


def open_html(tab: Any, tmp_path: Path, name: str, html: str) -> None:
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    tab.goto(path.as_uri())


def test_play_a_full_session(page, dev, tmp_path):
    expected = session_score(dev, ARRIVAL, PAIRS)
    open_html(page, tmp_path, "play.html", play_page(dev, ARRIVAL))
    tid = page.get_by_test_id
    assert tid("round").inner_text() == "1 / 24"
    assert tid("confirm").is_disabled()
    for s, (i, j) in enumerate(PAIRS):
        assert tid("round").inner_text() == f"{s + 1} / 24"
        if s == KEYBOARD_ROUND:
            page.keyboard.press(str(i + 1))
            page.keyboard.press(str(j + 1))
        else:
            tid(f"persona-{i}").click()
            tid(f"persona-{j}").click()
        assert tid(f"persona-{i}").get_attribute("aria-pressed") == "true"
        tid("confirm").click()
        shown = tid("click")
        assert int(shown.get_attribute("data-winner")) == expected["winners"][s], f"round {s}"
        assert shown.inner_text() == dev.personas[expected["winners"][s]]["name"]
        assert tid("score").inner_text() == f"{expected['running_scores'][s]:.1f}"
        if s == 2:
            screenshot(page, tmp_path, "play.png")
        tid("next").click()
    final = tid("final-score").inner_text()
    assert float(final) == pytest.approx(expected["score"], abs=0.05 + 1e-9)
    assert final == f"{expected['score']:.1f}"
    assert tid("round").inner_text() == "24 / 24"
    student = dev.students[dev.student_index[ARRIVAL]]
    assert tid("profile").inner_text() == student["name"]
    rows = tid("history-row")
    assert rows.count() == 24
    for k in range(24):  # newest first
        row, s = rows.nth(k), 23 - k
        got = [int(row.get_attribute(a)) for a in ("data-first", "data-second", "data-winner")]
        assert got == [*PAIRS[s], expected["winners"][s]]
    page.get_by_test_id("final").scroll_into_view_if_needed()
    screenshot(page, tmp_path, "play_done.png")
    tid("restart").click()
    assert tid("round").inner_text() == "1 / 24" and tid("score").inner_text() == "\u2014"


def test_two_widgets_on_one_page_do_not_interfere(page, dev, tmp_path):
    body = play_widget(dev, 0, element_id="left") + play_widget(dev, 5, element_id="right")
    open_html(page, tmp_path, "two.html", document("two", body))
    right = page.locator("#right")
    right.get_by_test_id("persona-5").click()
    right.get_by_test_id("persona-1").click()
    right.get_by_test_id("confirm").click()
    winner = int(right.get_by_test_id("click").get_attribute("data-winner"))
    assert winner == session_score(dev, 5, [(5, 1)])["winners"][0]
    left = page.locator("#left")
    assert left.get_by_test_id("round").inner_text() == "1 / 24"
    assert left.get_by_test_id("history-row").count() == 0
    assert right.get_by_test_id("history-row").count() == 1


def test_replay_steps_to_the_last_arrival(page, dev, tmp_path):
    row = run_cell(dev, "notransfer", keep_trajectory=True)
    traj = row.pop("trajectory")
    open_html(page, tmp_path, "replay.html", replay_page(dev, row, traj))
    tid = page.get_by_test_id
    assert tid("arrival").get_attribute("data-arrival") == "0"
    tid("next").click()
    tid("next").click()
    assert tid("arrival").get_attribute("data-arrival") == "2"
    tid("last").click()
    last = dev.N - 1
    assert tid("arrival").get_attribute("data-arrival") == str(last)
    assert tid("next").is_disabled()
    rows = tid("round-row")
    assert rows.count() == dev.S
    winners = np.where(traj.outcome == 1, traj.first, traj.second)
    best = np.argsort(-dev.U[last], axis=-1)[:, :2]
    for s in range(dev.S):
        r = rows.nth(s)
        got = [int(r.get_attribute(a)) for a in ("data-first", "data-second", "data-winner")]
        assert got == [traj.first[last, s], traj.second[last, s], winners[last, s]]
        assert r.get_attribute("data-best") == f"{best[s, 0]},{best[s, 1]}"
    student = dev.students[dev.student_index[last]]
    assert tid("student").inner_text() == student["name"]
    assert tid("excess").inner_text() == f"{row['excess_per_arrival'][last]:.2f}"
    # every arrival's dot is drawn once the replay reaches the end
    assert page.locator("[data-testid=chart] circle[visibility=visible]").count() == dev.N
    screenshot(page, tmp_path, "replay.png")
    tid("prev").click()
    assert tid("arrival").get_attribute("data-arrival") == str(last - 1)
    tid("slider").fill("10")
    assert tid("arrival").get_attribute("data-arrival") == "10"
    first_row = tid("round-row").first
    assert int(first_row.get_attribute("data-first")) == traj.first[10, 0]
    tid("speed").select_option("30")
    tid("play").click()
    page.wait_for_function(
        "document.querySelector('[data-testid=arrival]').dataset.arrival > 12", timeout=5000
    )
    tid("play").click()
    assert tid("play").get_attribute("aria-pressed") == "false"


def test_number_keys_work_as_soon_as_the_play_page_opens(page, dev, tmp_path):
    """No click first: the keys 1-6 pick personas on a page just opened."""
    open_html(page, tmp_path, "play.html", play_page(dev, ARRIVAL))
    tid = page.get_by_test_id
    page.keyboard.press("2")
    page.keyboard.press("5")
    assert tid("persona-1").get_attribute("aria-pressed") == "true"
    assert tid("persona-4").get_attribute("aria-pressed") == "true"
    assert tid("confirm").is_enabled()
    page.keyboard.press("5")  # a second press takes it back
    assert tid("persona-4").get_attribute("aria-pressed") == "false"
    page.keyboard.press("4")
    tid("confirm").click()
    expected = session_score(dev, ARRIVAL, [(1, 3)])
    assert int(tid("click").get_attribute("data-winner")) == expected["winners"][0]


def test_keys_go_to_one_widget_when_a_page_has_two(page, dev, tmp_path):
    body = play_widget(dev, 0, element_id="left") + play_widget(dev, 5, element_id="right")
    open_html(page, tmp_path, "two.html", document("two", body))
    left, right = page.locator("#left"), page.locator("#right")
    page.keyboard.press("3")  # nothing used yet: the first widget on screen
    assert left.get_by_test_id("persona-2").get_attribute("aria-pressed") == "true"
    assert right.get_by_test_id("persona-2").get_attribute("aria-pressed") == "false"
    right.get_by_test_id("persona-0").click()
    page.keyboard.press("6")  # the widget last used
    assert right.get_by_test_id("persona-5").get_attribute("aria-pressed") == "true"
    assert left.get_by_test_id("persona-5").get_attribute("aria-pressed") == "false"


def test_replay_opens_on_a_drawn_chart(page, dev, tmp_path):
    """At arrival 0 the chart already shows the whole run's curve and the first arrival."""
    row = run_cell(dev, "notransfer", keep_trajectory=True)
    traj = row.pop("trajectory")
    open_html(page, tmp_path, "replay.html", replay_page(dev, row, traj))
    tid = page.get_by_test_id
    assert tid("arrival").get_attribute("data-arrival") == "0"
    chart = tid("chart").bounding_box()
    whole = page.locator("[data-testid=chart] [data-testid=whole-run]")
    assert whole.count() == 1
    box = whole.bounding_box()
    assert box is not None and box["width"] > 0.85 * chart["width"] and box["height"] > 5
    assert whole.get_attribute("d").count("L") == dev.N - 1
    assert page.locator("[data-testid=chart] circle[visibility=visible]").count() == 1
    screenshot(page, tmp_path, "replay_open.png")
