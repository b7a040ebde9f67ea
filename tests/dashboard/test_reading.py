"""The pages as a person reads them, at a laptop's width and a phone's, in a real Chromium.

Screenshots go to test-artifacts/ (looked at when these tests change).
"""

from __future__ import annotations

import uuid

import pytest

from tests.dashboard.conftest import ARTIFACTS, logged_in
from tests.dashboard.pages import seed_rows

pytestmark = pytest.mark.slow

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
NOT_LOGGED_IN = "Not logged in · Please run /login"
CREDENTIAL = (
    "claude-code has no usable credential: set ANTHROPIC_API_KEY (in the daemon's "
    "environment, or in the database: `butler credentials set ANTHROPIC_API_KEY -c "
    f"roster/health`); the CLI said: {NOT_LOGGED_IN}"
)


def failed_session(seeded) -> str:
    """A session whose CLI printed its login notice and failed, as a keyless Claude does."""
    session = str(uuid.uuid4())
    seeded.sql(
        "INSERT INTO sessions (id, prompt, output, error, status, trigger_source, runtime,"
        " duration_ms) VALUES ($1, 'What is due today? Check the calendar and the pills.',"
        " $2, $3, 'failed', 'external', 'claude-code', 2300)",
        uuid.UUID(session),
        NOT_LOGGED_IN,
        CREDENTIAL,
    )
    return session


def sideways(page) -> int:
    """How far the page scrolls sideways (0 when it fits the screen)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_session_list_reads_as_cards_on_a_phone_and_as_a_table_on_a_laptop(
    seeded, browser, size
):
    seed_rows(seeded)
    failed_session(seeded)
    name = "desktop" if size is DESKTOP else "phone"
    page = logged_in(browser, seeded.url, viewport=size)
    row = page.locator("#sessions tr", has_text="What is due today?")
    prompt = row.locator("td.what")
    if size is PHONE:
        assert page.locator("#sessions thead").first.is_hidden()  # no squeezed header row
        # Each field on a line of its own, named; the prompt's words whole.
        assert (
            page.evaluate(
                "getComputedStyle(document.querySelector('#sessions td.what'), '::before').content"
            )
            == '"Prompt"'
        )
        height = prompt.bounding_box()["height"]
        assert height < 3 * 20, f"the prompt takes {height}px: its words broke apart"
        assert row.bounding_box()["width"] <= PHONE["width"]
    else:
        assert page.locator("#sessions thead").first.is_visible()
        assert len({c.bounding_box()["y"] for c in row.locator("td").all()}) == 1  # a table row
    assert sideways(page) <= 0
    page.screenshot(path=str(ARTIFACTS / f"sessions-{name}.png"), full_page=True)
    page.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_failed_session_says_its_status_once_and_never_shows_a_login_notice_as_an_answer(
    seeded, browser, size
):
    session = failed_session(seeded)
    page = logged_in(browser, seeded.url, viewport=size)
    page.goto(f"{seeded.url}/sessions/{session[:8]}")  # as the list and the CLI show it
    page.wait_for_url(f"{seeded.url}/sessions/{session}")
    assert page.inner_text("main").count("Status:") == 1
    assert page.locator("[data-status]").count() == 1  # not again in the details below
    assert page.locator("dt", has_text="status").count() == 0
    assert page.inner_text("#error") == CREDENTIAL  # the reason, above everything
    headings = page.locator("main h2").all_inner_texts()
    assert "Answer" not in headings and "Output" not in headings
    assert "What the runtime printed before it stopped" in headings
    assert page.inner_text("#output") == NOT_LOGGED_IN
    assert "not-an-answer" in (page.get_attribute("#output", "class") or "")
    assert sideways(page) <= 0
    name = "desktop" if size is DESKTOP else "phone"
    page.screenshot(path=str(ARTIFACTS / f"failed-session-{name}.png"), full_page=True)
    page.close()
