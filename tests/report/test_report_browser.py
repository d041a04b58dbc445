"""The report in headless Chromium: offline (no request but the file), figures drawn, no errors.

Skipped when the ``playwright`` package or ``/usr/bin/chromium`` is missing, unless
``PREFDUEL_REQUIRE_BROWSER=1``: then they fail instead. Playwright launches the system Chromium.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from pb_report_rows import sweep_results

from prefduel.report import build_report

REQUIRE_BROWSER = os.environ.get("PREFDUEL_REQUIRE_BROWSER") == "1"
if REQUIRE_BROWSER:
    import playwright.sync_api as sync_api
else:
    sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

pytestmark = pytest.mark.skipif(
    not REQUIRE_BROWSER and shutil.which(CHROMIUM) is None, reason=f"no Chromium at {CHROMIUM}"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("browser")
    results, world = sweep_results(base)
    return {"url": build_report(results, base / "out").html.as_uri(), "world": world}


@pytest.fixture(scope="module")
def report_url(built) -> str:
    return built["url"]


@pytest.fixture(scope="module")
def loaded(report_url) -> Iterator[dict[str, Any]]:
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(5000)
        requests: list[str] = []
        errors: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(report_url, wait_until="load")
        yield {"page": page, "requests": requests, "errors": errors, "url": report_url}
        browser.close()


def test_loads_offline_without_errors(loaded):
    assert loaded["requests"] == [loaded["url"]]  # nothing fetched but the page itself
    assert loaded["errors"] == []


def test_figures_are_drawn(loaded):
    page = loaded["page"]
    figures = page.locator(".figure svg")
    assert figures.count() == 3
    for i in range(3):
        box = figures.nth(i).bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 100


def test_navigation_reaches_every_section(loaded):
    page = loaded["page"]
    links = page.locator("nav.toc a")
    targets = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert {"#leaderboard", "#curves", "#gains", "#profiles", "#settings"} <= set(targets)
    for target in targets:
        assert page.locator(target).count() == 1


#: 24 varied pairs for a full session, both listing orders.
PAIRS = [
    (0, 1), (4, 2), (5, 3), (1, 0), (2, 5), (3, 4), (5, 0), (1, 4), (2, 3), (0, 5), (4, 1),
    (3, 2), (1, 5), (5, 2), (0, 3), (4, 0), (2, 1), (3, 5), (1, 3), (5, 4), (0, 2), (2, 4),
    (4, 3), (3, 0),
]  # fmt: skip


def test_a_full_session_played_in_the_report_scores_as_python_says(loaded, built, tmp_path):
    """The report's "Be the policy" section (first world, first seed, arrival 0): play all 24
    rounds by clicking and compare every click and the final score with ``session_score``."""
    from prefduel.pages import session_score
    from prefduel.worlds import get_world

    page = loaded["page"]
    assert page.locator("#be-the-policy").count() == 1
    world = get_world(built["world"], 0)
    expected = session_score(world, 0, PAIRS)
    tid = page.get_by_test_id
    for s, (i, j) in enumerate(PAIRS):
        assert tid("round").inner_text() == f"{s + 1} / 24"
        tid(f"persona-{i}").click()
        tid(f"persona-{j}").click()
        tid("confirm").click()
        assert int(tid("click").get_attribute("data-winner")) == expected["winners"][s]
        tid("next").click()
    assert tid("final-score").inner_text() == f"{expected['score']:.1f}"
    assert tid("history-row").count() == 24
    tid("final").scroll_into_view_if_needed()
    path = tmp_path / "report_play.png"
    page.screenshot(path=str(path), full_page=False)
    assert path.stat().st_size > 10_000
    if os.environ.get("PREFDUEL_SCREENSHOTS") == "1":
        os.makedirs("/tmp/pb_screens", exist_ok=True)
        shutil.copy(path, "/tmp/pb_screens/report_play.png")
        page.screenshot(path="/tmp/pb_screens/report_full.png", full_page=True)
    assert loaded["errors"] == []
