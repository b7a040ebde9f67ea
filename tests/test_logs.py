"""One log handler for butler, uvicorn and FastMCP: text on a terminal, JSON lines otherwise."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import re

import fastmcp  # noqa: F401  (its import installs the handler setup_logging must replace)
import pytest

from butler.logs import current_butler, setup_logging


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    yield
    root.handlers[:], level = saved
    root.setLevel(level)


def test_fastmcp_and_uvicorn_lines_go_through_the_one_handler_with_the_butlers_name(
    restore_logging, monkeypatch
):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    setup_logging("info", "auto")
    token = current_butler.set("alpha")
    try:
        logging.getLogger("fastmcp.server").warning("a fastmcp warning")
        logging.getLogger("uvicorn.error").info("Application startup complete.")
    finally:
        current_butler.reset(token)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["logger"], line["butler"]) for line in lines] == [
        ("fastmcp.server", "alpha"),
        ("uvicorn.error", "alpha"),
    ]


def test_a_terminal_gets_coloured_text_and_json_can_be_forced(restore_logging, monkeypatch):
    controller, terminal = pty.openpty()
    try:
        with os.fdopen(terminal, "w", closefd=False) as tty:
            monkeypatch.setattr("sys.stderr", tty)
            setup_logging("info", "auto")
            logging.getLogger("butler.test").info("hello", extra={"butler": "alpha", "n": 1})
            tty.flush()
            shown = os.read(controller, 4096).decode()
            setup_logging("info", "json")
            logging.getLogger("butler.test").info("hello", extra={"butler": "alpha"})
            tty.flush()
            forced = os.read(controller, 4096).decode()
    finally:
        os.close(controller)
        os.close(terminal)
    assert "\x1b[" in shown  # coloured
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert "INFO" in plain and "alpha: hello n=1" in plain
    assert not plain.lstrip().startswith("{")
    assert json.loads(forced.strip())["event"] == "hello"


def test_a_request_line_keeps_its_path_but_never_its_query_or_credential_headers(
    restore_logging, monkeypatch
):
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    setup_logging("debug", "json")
    secret = "s3cret-token-value"
    access = logging.getLogger("uvicorn.access")
    access.warning('%s - "%s %s HTTP/%s" %d', "127.0.0.1:1", "GET", f"/?token={secret}", "1.1", 303)
    error = logging.getLogger("uvicorn.error")
    error.info('%s - "WebSocket %s" 403', "127.0.0.1:2", f"/sessions/x/terminal?token={secret}")
    error.debug("< %s: %s", "Authorization", f"Bearer {secret}")
    error.debug("< %s: %s", "cookie", f"butler_token_8101={secret}")
    logging.getLogger("butler.test").warning(
        "fetched", extra={"url": f"http://127.0.0.1:8101/api/status?ticket={secret}&x=1"}
    )
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert secret not in stream.getvalue()
    assert [line["event"] for line in lines[:2]] == [
        '127.0.0.1:1 - "GET / HTTP/1.1" 303',
        '127.0.0.1:2 - "WebSocket /sessions/x/terminal" 403',
    ]
    assert lines[4]["url"] == "http://127.0.0.1:8101/api/status"
