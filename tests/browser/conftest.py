"""Fixtures of the browser tests: one real app and one headless Chromium for the whole run.

The app is ``python app.py`` on the shipped checkpoint (or the tiny test one when the shipped
model is absent), started by the same launcher the benchmarks use (``explorer.launch``). It
keeps no state between visitors, so every browser test module shares it; a module that needs
another checkpoint starts its own (tests/browser/test_beam.py). The page helpers are in
tests/helpers.py. Needs Debian's chromium at /usr/bin/chromium (or CHROMIUM=path) and the
``playwright`` pip package (``playwright install`` is not needed).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import CHROME_ARGS, CHROMIUM, NO_TOUR, SHIPPED, opened_page, serve_app


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
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
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
