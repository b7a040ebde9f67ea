"""``butler dashboard --roster`` sends each butler's owner token only to that butler.

The roster polls every butler with its owner token. A butler that is down
leaves its port free, and another local user can listen there (or on the
port a ``serving.json`` names): the token must not go to a listener that
is not the owner's own process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from butler.config import load_config
from butler.dashboard.standalone import ask
from butler.paths import serving_file
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
    serving_file("beta").write_text(json.dumps({"host": "127.0.0.1", "port": port}))
    row = ask(config)
    assert row["status"] == "not ours"
    assert TEST_TOKEN not in out.read_text()
