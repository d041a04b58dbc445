"""The report in headless Chromium: offline (no request but the file), figures drawn, no errors.

Skipped when the ``playwright`` package or ``/usr/bin/chromium`` is missing, unless
``PB_REQUIRE_BROWSER=1``: then they fail instead. Playwright launches the system Chromium.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from pb_report_rows import sweep_results

from persona_bench.report import build_report

REQUIRE_BROWSER = os.environ.get("PB_REQUIRE_BROWSER") == "1"
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
def report_url(tmp_path_factory) -> str:
    base = tmp_path_factory.mktemp("browser")
    results, _ = sweep_results(base)
    return build_report(results, base / "out").html.as_uri()


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


def test_play_widget_runs_inside_the_report(loaded):
    page = loaded["page"]
    if page.locator("#be-the-policy").count() == 0:
        pytest.skip("persona_bench.pages has no play widget")
    page.click('[data-testid="persona-0"]')
    page.click('[data-testid="persona-1"]')
    page.click('[data-testid="confirm"]')
    assert page.locator('[data-testid="history-row"]').count() == 1
    assert loaded["errors"] == []
