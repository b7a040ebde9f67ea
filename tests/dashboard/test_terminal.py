"""A builder's terminal in the dashboard: xterm.js in real Chromium, tmux on the other end.

Pages come in by the owner's login link; raw WebSocket clients (the
``websockets`` package) probe what a browser would not do by itself.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from butler.webterm.endpoint import MAX_MESSAGE, MAX_VIEWERS
from tests.builders.conftest import query
from tests.dashboard.conftest import ARTIFACTS, logged_in
from tests.helpers import TEST_TOKEN, wait_until

pytestmark = pytest.mark.slow

SHOWN_MS = 20_000
OWNER = {"Authorization": f"Bearer {TEST_TOKEN}"}


def tmux(builders, *args: str) -> str:
    done = subprocess.run(["tmux", "-L", builders.socket, *args], capture_output=True, text=True)
    return done.stdout.strip()


def clients(builders, builder: dict[str, Any]) -> list[str]:
    """The tmux clients attached to the builder's session (one per open terminal)."""
    out = tmux(builders, "list-clients", "-t", f"={builder['tmux_session']}", "-F", "#{client_pid}")
    return out.splitlines()


def pane_size(builders, builder: dict[str, Any]) -> tuple[int, int]:
    out = tmux(
        builders,
        "display",
        "-p",
        "-t",
        f"={builder['tmux_session']}:",
        "#{pane_width} #{pane_height}",
    )
    width, height = out.split()
    return int(width), int(height)


def shell_builder(builders) -> dict[str, Any]:
    builder = builders.spawn("--shell")
    builders.wait_screen(builder, "agent> ")
    return builder


def ws_url(builders, session_id: str, query_string: str = "") -> str:
    base = builders.daemon.url.replace("http://", "ws://", 1)
    return f"{base}/sessions/{session_id}/terminal{query_string}"


@pytest.fixture
def raw(dashboard) -> Iterator[Any]:
    """Open WebSocket clients on the daemon; every one is closed after the test."""
    opened: list[ClientConnection] = []

    def open_(url: str, **options: Any) -> ClientConnection:
        options.setdefault("additional_headers", OWNER)
        socket = connect(url, open_timeout=10, **options)
        opened.append(socket)
        return socket

    yield open_
    for socket in opened:
        socket.close()


def refusal(url: str, **options: Any) -> tuple[int, str]:
    """The HTTP status and body a refused handshake got."""
    with pytest.raises(InvalidStatus) as refused:
        connect(url, open_timeout=10, **options).close()
    response = refused.value.response
    return response.status_code, response.body.decode(errors="replace")


#: Every line the page's terminal holds. Read from xterm.js's buffer rather than its
#: rows: headless Chromium paints (requestAnimationFrame) only the page in front.
BUFFER = """() => {
  const buffer = window.terminal.buffer.active, lines = [];
  for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i).translateToString(true));
  return lines.join("\\n");
}"""


def terminal_text(page) -> str:
    return page.evaluate(BUFFER)


def shows(page, text: str) -> None:
    """Wait until the page's terminal holds ``text``."""
    script = f"text => ({BUFFER})().includes(text)"
    page.wait_for_function(script, arg=text, timeout=SHOWN_MS)


def open_terminal(browser, builders, builder: dict[str, Any], mode: str = "", **options: Any):
    page = logged_in(browser, builders.daemon.url, **options)
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security" in m.text else 0)
    page.goto(f"{builders.daemon.url}/sessions/{builder['session_id']}{mode}")
    page.locator('#terminal-state[data-state="open"]').wait_for(timeout=SHOWN_MS)
    shows(page, "agent>")
    return page, violations


def test_typing_in_the_page_runs_in_the_builder_under_the_strict_policy(dashboard, chromium):
    builders, _ = dashboard
    builder = shell_builder(builders)
    page, violations = open_terminal(chromium, builders, builder)
    page.locator("#terminal").click()
    page.keyboard.type("hello from the browser")
    page.keyboard.press("Enter")
    shows(page, "you said: hello from the browser")
    # The keystrokes reached the builder's own pane, not just the page.
    builders.wait_screen(builder, "you said: hello from the browser")
    # xterm.js's own <style> elements applied (by nonce): 13 px cells, not the page's 14 px.
    size = page.evaluate("getComputedStyle(document.querySelector('.xterm-rows')).fontSize")
    assert size == "13px"
    assert violations == []
    policy = page.request.get(page.url).headers["content-security-policy"]
    assert "script-src 'self';" in policy and "'nonce-" in policy
    # The live region's next re-render leaves the terminal standing.
    page.locator("#updated", has_text="updated").wait_for(timeout=SHOWN_MS)
    assert "you said: hello from the browser" in terminal_text(page)
    page.bring_to_front()  # and it is painted, not only held
    rows = page.locator("#terminal .xterm-rows")
    rows.filter(has_text="you said: hello from the browser").wait_for(timeout=SHOWN_MS)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-terminal.png"), full_page=True)
    page.close()
    wait_until(lambda: not clients(builders, builder), timeout=20)


def test_a_second_page_watches_read_only(dashboard, chromium, raw):
    builders, _ = dashboard
    builder = shell_builder(builders)
    typist, _ = open_terminal(chromium, builders, builder)
    watcher, violations = open_terminal(chromium, builders, builder, "?mode=view")
    assert len(clients(builders, builder)) == 2
    typist.locator("#terminal").click()
    typist.keyboard.type("seen by both")
    typist.keyboard.press("Enter")
    shows(watcher, "you said: seen by both")
    # Keys pressed on the watching page go nowhere...
    watcher.locator("#terminal").click()
    watcher.keyboard.type("from the watcher")
    watcher.keyboard.press("Enter")
    # ...and neither does input a hand-made read-only socket sends.
    viewer = raw(ws_url(builders, builder["session_id"], "?mode=view"))
    viewer.send(json.dumps({"type": "input", "data": "forged by a viewer\r"}))
    typist.keyboard.type("after them")
    typist.keyboard.press("Enter")
    screen = builders.wait_screen(builder, "you said: after them")
    assert "from the watcher" not in screen and "forged by a viewer" not in screen
    assert "you said: after them" in terminal_text(watcher)
    assert watcher.inner_text("#terminal-state") == "watching (read-only)"
    assert violations == []
    watcher.bring_to_front()
    watcher.locator("#terminal .xterm-rows", has_text="you said: after them").wait_for()
    watcher.screenshot(path=str(ARTIFACTS / "dashboard-terminal-watching.png"), full_page=True)
    typist.close()
    watcher.close()


def test_resizing_the_page_resizes_the_pane(dashboard, chromium):
    builders, _ = dashboard
    builder = shell_builder(builders)
    page, _ = open_terminal(chromium, builders, builder, viewport={"width": 1400, "height": 900})
    before = page.evaluate("[window.terminal.cols, window.terminal.rows]")
    # tmux keeps one row for its status line.
    wait_until(lambda: pane_size(builders, builder) == (before[0], before[1] - 1), timeout=20)
    page.set_viewport_size({"width": 800, "height": 600})
    page.wait_for_function("cols => window.terminal.cols < cols", arg=before[0], timeout=SHOWN_MS)
    after = page.evaluate("[window.terminal.cols, window.terminal.rows]")
    wait_until(lambda: pane_size(builders, builder) == (after[0], after[1] - 1), timeout=20)
    assert after[0] < before[0] and after[1] < before[1]
    page.close()


def test_no_terminal_without_the_token_or_from_a_foreign_origin(dashboard, raw):
    builders, held = dashboard
    builder = shell_builder(builders)
    url = ws_url(builders, builder["session_id"])
    status, body = refusal(url)
    assert status == 401 and "Authorization: Bearer" in body
    status, _ = refusal(url, additional_headers={"Authorization": "Bearer wrong"})
    assert status == 401
    for foreign in ("http://evil.example", "http://localhost:3000", "null"):
        status, body = refusal(url, additional_headers=OWNER, origin=foreign)
        assert status == 403 and "Origin" in body, foreign
    # A page of the butler's own origin, holding the token, is let in.
    raw(url, origin=builders.daemon.url).recv(timeout=10)
    # No terminal for what is not a running interactive builder, each saying why.
    missing = "00000000-0000-4000-8000-000000000000"
    status, body = refusal(ws_url(builders, missing), additional_headers=OWNER)
    assert status == 404 and missing in body
    status, body = refusal(url + "?mode=admin", additional_headers=OWNER)
    assert status == 400 and "control, view" in body
    held.release(held.start("not a builder", "hold-1"))
    wait_until(lambda: held.results, timeout=30)
    other = query(
        builders.schema, "SELECT id::text FROM sessions WHERE NOT metadata ? 'builder_id'"
    )
    status, body = refusal(ws_url(builders, other[0]["id"]), additional_headers=OWNER)
    assert status == 409 and "not an interactive builder" in body


def test_viewers_are_bounded_and_every_tmux_client_ends_with_its_socket(dashboard, raw):
    builders, _ = dashboard
    builder = shell_builder(builders)
    url = ws_url(builders, builder["session_id"], "?mode=view")
    sockets = [raw(url) for _ in range(MAX_VIEWERS)]
    wait_until(lambda: len(clients(builders, builder)) == MAX_VIEWERS, timeout=20)
    status, body = refusal(url, additional_headers=OWNER)
    assert status == 429 and f"already {MAX_VIEWERS} terminals" in body
    pids = clients(builders, builder)
    for socket in sockets:
        socket.close()
    wait_until(lambda: not clients(builders, builder), timeout=20)
    wait_until(lambda: not any(_alive(pid) for pid in pids), timeout=20)
    # A frame over the bound closes that terminal, and only its own client goes.
    big = raw(ws_url(builders, builder["session_id"]))
    wait_until(lambda: len(clients(builders, builder)) == 1, timeout=20)
    big.send(json.dumps({"type": "input", "data": "x" * MAX_MESSAGE}))
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            big.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    wait_until(lambda: not clients(builders, builder), timeout=20)


def test_stopping_the_daemon_ends_the_terminals(dashboard, raw):
    builders, _ = dashboard
    builder = shell_builder(builders)
    raw(ws_url(builders, builder["session_id"])).recv(timeout=10)
    pids = clients(builders, builder)
    assert len(pids) == 1
    assert builders.daemon.stop() == 0
    wait_until(lambda: not clients(builders, builder), timeout=20)
    assert not _alive(pids[0])
    # The builder itself outlives its daemon, as it does without a terminal.
    assert "agent> " in builders.screen(builder)


def _alive(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_killed_daemon_leaves_no_tmux_client(dashboard, raw):
    builders, _ = dashboard
    builder = shell_builder(builders)
    raw(ws_url(builders, builder["session_id"])).recv(timeout=10)
    pids = clients(builders, builder)
    builders.daemon.proc.kill()
    builders.daemon.proc.wait(timeout=30)
    # Its end of each pty closed with it; the tmux client on the other end hangs up.
    wait_until(lambda: not clients(builders, builder), timeout=20)
    wait_until(lambda: not _alive(pids[0]), timeout=20)
    assert "agent> " in builders.screen(builder)
