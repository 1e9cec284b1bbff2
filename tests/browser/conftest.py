"""Fixtures of the browser tests: one real app and one headless Chromium for the whole run.

The app is ``python app.py`` on the shipped checkpoint (or the tiny test one when the shipped
model is absent), started by the same launcher the benchmarks use (``explorer.launch``). It
keeps no state between visitors, so every browser test module shares it; a module that needs
another checkpoint starts its own (tests/browser/test_beam.py). The page helpers are in
tests/helpers.py.

They need a Chromium (``explorer.launch.find_chromium``: ``$CHROMIUM``, the system's, or
Playwright's own after ``playwright install chromium``). Where there is none, every test under
tests/browser is skipped with one line saying how to get one. The count in the summary, and
``REQUIRE_BROWSER=1`` (CI sets it) turning a skipped browser test into a failed run, live in
tests/conftest.py: with pytest-xdist only the root conftest sees every worker's reports.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.launch import NO_CHROMIUM, find_chromium
from tests.helpers import CHROME_ARGS, NO_TOUR, SHIPPED, opened_page, serve_app

HERE = Path(__file__).parent
CHROMIUM = find_chromium()


def pytest_collection_modifyitems(config, items):
    """Every test under tests/browser is a browser test; skip them all when there is no Chromium."""
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)
            if CHROMIUM is None:
                item.add_marker(pytest.mark.skip(reason=NO_CHROMIUM))


@pytest.fixture(scope="session")
def app_server(tmp_path_factory, request):
    """The real app every browser test module shares: ``.url``, ``.log``, ``.checkpoint``."""
    checkpoint = SHIPPED if (SHIPPED / "config.json").is_file() else request.getfixturevalue("tiny_checkpoint")
    with serve_app(checkpoint, tmp_path_factory.mktemp("server") / "app.log") as app:
        yield app


@pytest.fixture(scope="session")
def server(app_server):
    """The same app as ``(url, log)``."""
    return app_server.url, app_server.log


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A plain 1440×900 page (no device options); script errors fail the test."""
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert not errors, errors


@pytest.fixture
def desktop(browser, app_server):
    """The shared app on a 1366×900 desktop, the tour already seen; script errors fail the test."""
    with opened_page(
        browser, app_server.url, "desktop", init_script=NO_TOUR, timeout_ms=90_000, accept_downloads=True
    ) as pg:
        yield pg


@pytest.fixture
def phone(browser, app_server):
    """The shared app on a 390×844 phone (touch), the tour already seen."""
    with opened_page(
        browser, app_server.url, "phone", init_script=NO_TOUR, timeout_ms=90_000, accept_downloads=True
    ) as pg:
        yield pg
