"""The builder terminal's pure parts: sizes, messages, origins, the panel and its files."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from butler.dashboard import SECURITY_HEADERS
from butler.security.handshake import normalize_origin
from butler.webterm.endpoint import MAX_COLS, MAX_ROWS, MIN_COLS, MIN_ROWS, parse, size
from butler.webterm.panel import asset, terminal_panel

LIVE = {
    "id": "3a4f1b54-016d-48df-a93d-371300892316",
    "type": "shell",
    "status": "running",
    "metadata": {"builder_id": "shell-1", "tmux_session": "t-shell-1"},
}


def test_a_terminal_size_from_the_browser_is_clamped_or_defaulted():
    assert size("120", "40") == (120, 40)
    assert size(10**9, -5) == (MAX_COLS, MIN_ROWS)
    assert size(0, 10**9) == (MIN_COLS, MAX_ROWS)
    assert size("wide", None) == (80, 24)


def test_malformed_messages_read_as_nothing_to_do():
    assert parse('{"type": "input", "data": "ls"}') == {"type": "input", "data": "ls"}
    assert parse("not json") == {} and parse("[1, 2]") == {} and parse('"text"') == {}


def test_origins_compare_without_case_default_ports_or_a_trailing_slash():
    assert normalize_origin("HTTP://127.0.0.1:80/") == "http://127.0.0.1"
    assert normalize_origin("https://Butler.example.com:443") == "https://butler.example.com"
    assert normalize_origin("http://localhost:3000") == "http://localhost:3000"
    assert normalize_origin("null") == "null"


def test_only_a_live_interactive_builder_gets_a_terminal_and_a_style_nonce():
    panel = terminal_panel(LIVE)
    assert f'data-src="/sessions/{LIVE["id"]}/terminal"' in panel.html
    policy = panel.headers(SECURITY_HEADERS)["Content-Security-Policy"]
    assert f"style-src 'self' 'nonce-{panel.nonce}';" in policy
    assert "script-src 'self';" in policy  # scripts stay files of the butler's own
    assert terminal_panel(LIVE).nonce != panel.nonce  # fresh per page
    for other in (
        {**LIVE, "type": "task", "metadata": {}},  # not a builder
        {**LIVE, "metadata": {**LIVE["metadata"], "headless": True}},
        {**LIVE, "metadata": {**LIVE["metadata"], "ended_at": "2026-01-01T00:00:00+00:00"}},
    ):
        empty = terminal_panel(other)
        assert empty.html == "" and empty.headers(SECURITY_HEADERS) == SECURITY_HEADERS


def test_the_vendored_files_are_served_and_nothing_else():
    app = Starlette(routes=[Route("/assets/{folder}/{name}", asset)])
    client = TestClient(app)
    script = client.get("/assets/xterm/xterm.js")
    assert script.status_code == 200 and "text/javascript" in script.headers["content-type"]
    assert script.headers["x-content-type-options"] == "nosniff"
    assert "Permission is hereby granted" in client.get("/assets/xterm/LICENSE").text
    assert client.get("/assets/terminal/terminal.js").status_code == 200
    for path in ("/assets/xterm/xterm.js.map", "/assets/xterm/..%2fdashboard.js"):
        assert client.get(path).status_code == 404
