"""Headless Chromium for the browser tests (Playwright, sync API): the system browser, never a
downloaded one, with no network.

A pytest plugin (``tests/conftest.py`` loads it): the ``browser`` and ``page`` fixtures, and the
``needs_chromium`` mark a browser test module sets as its ``pytestmark``: the module is skipped
when Playwright or ``/usr/bin/chromium`` is missing, unless ``PREFDUEL_REQUIRE_BROWSER=1`` (set
by ``.ci/run``): then it fails instead. ``page`` fails the test on any page error, console error
or request to the network.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

REQUIRE_BROWSER = os.environ.get("PREFDUEL_REQUIRE_BROWSER") == "1"

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

needs_chromium = pytest.mark.skipif(
    not REQUIRE_BROWSER
    and (importlib.util.find_spec("playwright") is None or shutil.which(CHROMIUM) is None),
    reason=f"no playwright package or no Chromium at {CHROMIUM}",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    import playwright.sync_api as sync_api  # only where a browser test runs

    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(5000)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    tab.on("request", lambda req: errors.append(f"request {req.url}") if req.url.startswith(
        ("http:", "https:")) else None)  # fmt: skip
    yield tab
    context.close()
    assert errors == [], errors
