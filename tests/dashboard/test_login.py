"""Logging in, in a real Chromium: the login page on any page, a login that survives a
browser restart, and one login for a whole roster served by ``butler up``."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from butler.paths import DataOwner
from butler.security.owner_token import token_path
from tests.dashboard.conftest import CHROMIUM, CHROMIUM_FLAGS, FIFO_AGENT, launched
from tests.helpers import (
    REPO,
    TEST_TOKEN,
    free_port,
    get_json,
    missing_tool,
    wait_until,
    write_butler,
)

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def profile(folder: Path) -> Iterator[Any]:
    """Chromium with a profile on disk: closing it and opening it again is a browser restart."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        missing_tool(f"Chromium ({CHROMIUM})")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(folder), executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS
        )
        try:
            yield context
        finally:
            context.close()


def log_in(page: Any, token: str) -> None:
    """Paste ``token`` into the login page shown and send it."""
    page.fill("#token", token)
    page.click("#login button[type=submit]")


def test_a_login_survives_a_browser_restart_and_returns_to_the_page_asked_for(seeded, tmp_path):
    folder = tmp_path / "chromium-profile"
    with profile(folder) as browser:
        page = browser.new_page()
        page.goto(f"{seeded.url}/schedules")
        assert page.locator("#login").is_visible()  # the login page, not a raw 401
        log_in(page, "not-the-token-0123456789abcdefghijklmnop")
        assert "not this butler" in page.locator("#login-error").inner_text()
        log_in(page, TEST_TOKEN)
        page.wait_for_url(f"{seeded.url}/schedules")
        assert page.locator("#login").count() == 0 and "morning" in page.content()
    with profile(folder) as browser:  # the browser restarted: still logged in
        page = browser.new_page()
        page.goto(f"{seeded.url}/state")
        assert page.locator("#login").count() == 0
        assert page.url == f"{seeded.url}/state"


RUNTIME = {"type": "command", "command": [sys.executable, str(FIFO_AGENT), "{prompt_file}"]}


@contextlib.contextmanager
def roster_up(roster: Path, log: Path) -> Iterator[subprocess.Popen]:
    """``butler up`` for the roster, each butler with its own token file (no BUTLER_TOKEN)."""
    from tests.conftest import TEST_DSN

    env = {k: v for k, v in os.environ.items() if k != "BUTLER_TOKEN"}
    argv = [sys.executable, "-m", "butler.cli", "up", "--roster", str(roster)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*argv, "--database-url", TEST_DSN], stdout=out, stderr=out, cwd=REPO, env=env
        )
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_one_login_opens_every_butler_the_roster_page_links_to(roster, tmp_path):
    from tests.dashboard.conftest import run_sql

    ports = {"alpha": free_port(), "beta": free_port()}
    schemas = {name: f"t_login_{os.getpid()}_{name}" for name in ports}
    for name, port in ports.items():
        write_butler(roster, name, port=port, schema=schemas[name], runtime=RUNTIME)
    log = tmp_path / "up.log"
    try:
        with roster_up(roster, log) as proc, launched() as browser:
            alpha, beta = (f"http://127.0.0.1:{ports[n]}" for n in ("alpha", "beta"))

            def up() -> bool:
                assert proc.poll() is None, log.read_text()
                try:
                    return all(get_json(f"{u}/health")[0] == 200 for u in (alpha, beta))
                except OSError:
                    return False

            wait_until(up, timeout=90)
            tokens = {n: token_path(DataOwner(n, roster / n)).read_text().strip() for n in ports}
            assert tokens["alpha"] != tokens["beta"]  # each butler its own token
            page = browser.new_page()
            page.goto(f"{alpha}/roster")
            log_in(page, tokens["alpha"])
            page.wait_for_url(f"{alpha}/roster")
            page.click('#roster tr[data-butler="beta"] th a')
            page.wait_for_url(f"{beta}/")  # the ticket is out of the address bar
            assert page.locator("#login").count() == 0
            assert "sessions and builders" in page.content()
            page.goto(f"{beta}/charts")  # and the login holds there from now on
            assert page.locator("#login").count() == 0
    finally:
        for schema in schemas.values():
            run_sql("public", f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_link_from_another_site_opens_the_page_for_a_browser_logged_in(seeded):
    with launched() as browser:
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{seeded.url}/?token={TEST_TOKEN}")
        # A notification's link, clicked on another site (localhost is not 127.0.0.1):
        # SameSite=Strict holds the cookie back.
        elsewhere = seeded.url.replace("127.0.0.1", "localhost") + "/health"
        page.goto(elsewhere)
        page.set_content(f'<a id="go" href="{seeded.url}/state">the butler</a>')
        page.click("#go")
        page.wait_for_url(f"{seeded.url}/state")
        page.locator("main#live").wait_for()
        assert page.locator("#login").count() == 0
        # A browser never logged in gets the login page there, once, and no loop.
        stranger = browser.new_context().new_page()
        stranger.goto(elsewhere)
        stranger.set_content(f'<a id="go" href="{seeded.url}/state">the butler</a>')
        stranger.click("#go")
        stranger.locator("#login").wait_for()
        assert stranger.url == f"{seeded.url}/state"
        context.close()


#: The widths a page is looked at: a laptop's window and a phone held upright.
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def fetch_bare(url: str) -> tuple[int, str]:
    """GET ``url`` as a browser that never logged in: no token, no cookie."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.headers.get("content-type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("content-type", "")


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_login_page_is_styled_before_any_login_and_a_wrong_token_reads_as_an_error(
    seeded, size
):
    # The page's own stylesheet and script answer a stranger; nothing else does.
    assert fetch_bare(f"{seeded.url}/assets/dashboard.css") == (200, "text/css; charset=utf-8")
    assert fetch_bare(f"{seeded.url}/assets/dashboard.js")[0] == 200
    assert fetch_bare(f"{seeded.url}/assets/xterm/xterm.js")[0] == 401
    assert fetch_bare(f"{seeded.url}/api/sessions")[0] == 401
    with launched() as browser:
        page = browser.new_page(viewport=size)
        page.goto(f"{seeded.url}/")
        page.locator("#login").wait_for()
        body = page.evaluate("getComputedStyle(document.body).fontFamily")
        assert "system-ui" in body  # the dashboard's own type, not the browser's default
        header = "getComputedStyle(document.querySelector('header')).borderBottomStyle"
        assert page.evaluate(header) == "solid"
        log_in(page, "not-the-token-0123456789abcdefghijklmnop")
        alert = page.locator("#login-error")
        alert.wait_for()
        colours = page.evaluate(
            "(() => { const s = getComputedStyle(document.getElementById('login-error'));"
            " return [s.color, s.backgroundColor, s.borderLeftColor]; })()"
        )
        assert colours == ["rgb(185, 28, 28)", "rgb(254, 226, 226)", "rgb(185, 28, 28)"]
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, "the login page scrolls sideways"
        name = "desktop" if size is DESKTOP else "phone"
        page.screenshot(path=str(REPO / "test-artifacts" / f"login-{name}.png"), full_page=True)
