"""The dashboard in a real headless Chromium: what a person sees, and that it moves by itself."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.dashboard.conftest import ARTIFACTS, logged_in
from tests.helpers import wait_until

pytestmark = pytest.mark.slow

LIVE_MS = 20_000  # the page polls every 1.5 s; a change must show well within this


def status_of(page, session_id: str):
    return page.locator(f'tr[data-session="{session_id}"] td.status')


def test_sessions_and_builders_grouped_and_updating_live(dashboard, chromium):
    builders, held = dashboard
    builder = builders.spawn("Fix the login bug")
    builders.wait_screen(builder, "agent> ")
    fifo = held.start("Summarize the inbox", "hold-1")

    page = logged_in(chromium, builders.daemon.url, viewport={"width": 1400, "height": 900})
    # Builders, grouped by type: the task builder, running, with its branch.
    row = page.locator(f'div[data-group="builder:task"] tr[data-builder="{builder["id"]}"]')
    row.wait_for(timeout=LIVE_MS)
    assert "running" in row.inner_text() and builder["branch"] in row.inner_text()
    # Sessions, grouped by type and trigger source: the trigger appears while it runs.
    group = page.locator('div[data-group="trigger · external"]')
    running = group.locator("tr", has_text="Summarize the inbox")
    running.wait_for(timeout=LIVE_MS)  # arrived without a reload
    session_id = running.get_attribute("data-session")
    assert status_of(page, session_id).inner_text() == "running"
    assert page.locator("#sessions h2").inner_text() == "Sessions (1)"
    # Every builder type gets its own group, in spec, task, protocol, shell order.
    for args in (["-p", "0009"], ["--protocol", "cleanup"], ["--shell"]):
        builders.spawn(*args)
    page.locator('div[data-group="builder:shell"] tr').nth(1).wait_for(timeout=LIVE_MS)
    groups = page.locator("#builders div.group").evaluate_all(
        "nodes => nodes.map(n => n.dataset.group)"
    )
    assert groups == ["builder:spec", "builder:task", "builder:protocol", "builder:shell"]
    assert page.locator("#builders h2").inner_text() == "Builders (4)"

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-running.png"), full_page=True)
    held.release(fifo)
    page.locator(f'tr[data-session="{session_id}"] td.status[data-status="succeeded"]').wait_for(
        timeout=LIVE_MS
    )  # the same page, changed live
    cells = page.locator(f'tr[data-session="{session_id}"] td').all_inner_texts()
    # A busy machine can hold a session past a minute: "1 m 11 s".
    assert cells[4] == "command" and re.fullmatch(r"(\d+ m )?\d+(\.\d)? m?s", cells[7])
    assert cells[5] == "local"  # ran in the daemon, not on a worker
    assert cells[3] == ""  # succeeded: no error to show
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)

    # The session's own page: prompt, output and tool calls.
    page.click(f'tr[data-session="{session_id}"] a')
    page.wait_for_url(re.compile(f"/sessions/{session_id}$"))
    assert "Summarize the inbox" in page.inner_text("#prompt")
    assert page.inner_text("#output").startswith("done: WAIT:")
    assert page.inner_text("#tool-calls") == "None recorded."
    page.screenshot(path=str(ARTIFACTS / "dashboard-session.png"), full_page=True)
    page.close()


def test_a_live_builders_page_shows_its_terminal(dashboard, chromium):
    builders, _ = dashboard
    builder = builders.spawn("--shell")
    builders.wait_screen(builder, "agent> ")
    page = logged_in(chromium, builders.daemon.url)
    page.goto(f"{builders.daemon.url}/sessions/{builder['session_id']}")
    assert "agent>" in page.inner_text("#output")
    assert f"butler builders attach {builder['id']}" in page.inner_text("dl")
    # The runtime ends; the open page turns to the recorded outcome by itself.
    target = f"={builder['tmux_session']}:"
    subprocess.run(["tmux", "-L", builders.socket, "send-keys", "-t", target, "exit", "Enter"])
    page.locator('span.status[data-status="succeeded"]').wait_for(timeout=LIVE_MS)
    assert page.locator("h2", has_text="Output").count() == 1
    page.close()


def test_everything_shown_is_escaped(dashboard, chromium):
    builders, held = dashboard
    hostile = "<script>window.pwned = 1</script><img src=x onerror=window.pwned=2><b>bold</b>"
    fifo = held.start(hostile, "hold-2")
    page = logged_in(chromium, builders.daemon.url)
    row = page.locator("#sessions tr", has_text="<script>window.pwned = 1</script>")
    row.wait_for(timeout=LIVE_MS)  # shown as text, after a live update too
    held.release(fifo)
    wait_until(lambda: held.results, timeout=30)
    page.locator('#sessions td.status[data-status="succeeded"]').wait_for(timeout=LIVE_MS)
    assert page.evaluate("window.pwned") is None
    assert page.locator("#sessions b").count() == 0 and page.locator("#sessions img").count() == 0
    session_id = row.get_attribute("data-session")
    page.goto(f"{builders.daemon.url}/sessions/{session_id}")
    assert hostile in page.inner_text("#prompt")
    assert page.evaluate("window.pwned") is None
    page.close()
