"""``butler dashboard --roster`` sends each butler's owner token only to that butler.

The roster polls every butler with its owner token. A butler that is down
leaves its port free, and another local user can listen there (or on the
port a ``serving.json`` names): the token must not go to a listener that
is not the owner's own process.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from butler.client import tool_call
from butler.config import load_config
from butler.dashboard.standalone import ask
from butler.errors import UserError
from butler.paths import serving_file
from butler.security.owner_token import token_path
from tests.helpers import TEST_TOKEN, free_port, wait_until, write_butler

#: An HTTP server run as ``nobody``: it answers like a butler and prints what it was sent.
THIEF = """
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print(self.headers.get("Authorization"), flush=True)
        body = json.dumps({"name": sys.argv[2], "status": "up"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
print("listening", flush=True)
server.serve_forever()
"""


@pytest.fixture
def thief(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """Another local user (``nobody``) listening on a free port; its output file."""
    port, out = free_port(), tmp_path / "thief.out"
    argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable]
    with out.open("w") as sink:
        proc = subprocess.Popen([*argv, "-c", THIEF, str(port), "beta"], stdout=sink)
    try:
        wait_until(lambda: "listening" in out.read_text() or proc.poll() is not None)
        assert proc.poll() is None, "the listener as nobody did not start"
        yield port, out
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_a_port_another_user_holds_gets_no_token(roster, thief):
    port, out = thief
    config = load_config(write_butler(roster, "beta", port=port))  # beta is down
    row = ask(config)
    assert row["status"] == "not ours"
    assert TEST_TOKEN not in out.read_text()


@pytest.mark.slow
def test_a_serving_note_pointing_at_another_users_port_gets_no_token(roster, thief):
    port, out = thief
    config = load_config(write_butler(roster, "beta", port=free_port()))
    serving_file(config).write_text(json.dumps({"host": "127.0.0.1", "port": port}))
    row = ask(config)
    assert row["status"] == "not ours"
    assert TEST_TOKEN not in out.read_text()


@pytest.mark.slow
async def test_a_cli_command_sends_no_token_to_another_users_listener(roster, thief):
    port, out = thief
    config = load_config(write_butler(roster, "beta", port=port))  # beta is down
    with pytest.raises(UserError, match=f"port {port} is held by another user's process"):
        tool_call(config, "status", {}, timeout=5)  # refused before any connection
    assert TEST_TOKEN not in out.read_text()


class _Recorder(http.server.BaseHTTPRequestHandler):
    """A butler of this user's: answers a summary and keeps the token it was sent."""

    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        _Recorder.seen.append(self.headers.get("Authorization"))
        body = json.dumps({"name": "beta", "status": "up"}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def own_listener() -> Iterator[int]:
    """An HTTP server of this user's own on a free port, in a thread."""
    _Recorder.seen = []
    server = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_each_butler_gets_its_token_file_never_the_rosters_own_env_token(roster, own_listener):
    config = load_config(write_butler(roster, "beta", port=own_listener))
    own = "beta-own-token-0123456789-abcdefghijklmnopqrs"
    token_path(config).write_text(own + "\n")
    token_path(config).chmod(0o600)
    assert ask(config)["status"] == "up"
    assert _Recorder.seen == [f"Bearer {own}"]  # BUTLER_TOKEN (TEST_TOKEN) is the roster's


def test_a_butler_without_a_token_file_shows_no_token_and_none_is_made(
    roster, own_listener, monkeypatch
):
    config = load_config(write_butler(roster, "beta", port=own_listener))
    for env in ({"BUTLER_TOKEN": TEST_TOKEN}, {}):
        monkeypatch.delenv("BUTLER_TOKEN", raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        assert ask(config)["status"] == "no token"
        assert not token_path(config).exists()
    assert _Recorder.seen == []  # asked nothing without a token
