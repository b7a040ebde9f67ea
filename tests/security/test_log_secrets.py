"""No secret in any log line: every kind of token, sent every way to every route, stays out.

A token travels in a header, a cookie or a query string (the dashboard's
login link, a terminal's handshake from a script, a mistaken client); the
daemon's log must hold none of them, whatever it refused or let in.
"""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.sync.client import connect

from tests.conftest import TEST_DSN
from tests.helpers import TEST_TOKEN, DaemonProcess, butler_client, free_port, write_butler
from tests.security.conftest import agent_runtime

pytestmark = pytest.mark.slow  # a daemon process and a session in it

MISSING = "00000000-0000-4000-8000-000000000000"
#: Every route the daemon serves, a page that does not exist among them.
ROUTES = (
    "/",
    "/health",
    "/api/status",
    "/api/sessions",
    f"/sessions/{MISSING}",
    f"/api/sessions/{MISSING}",
    "/state",
    "/schedules",
    "/charts",
    "/conversations",
    "/roster",
    "/api/roster",
    "/assets/dashboard.css",
    "/assets/xterm/xterm.js",
    "/mcp",
    "/sse",
    "/nowhere",
)


class DebugDaemon(DaemonProcess):
    """``butler run`` at its most talkative level: whatever it logs, it logs here."""

    def argv(self) -> list[str]:
        return [*super().argv(), "--log-level", "debug", "--log-format", "json"]


def request(url: str, token: str, how: str) -> None:
    """GET ``url`` carrying ``token`` one way; whatever the answer, it is read and dropped."""
    headers = {"Host": "127.0.0.1"}
    if how == "header":
        headers["Authorization"] = f"Bearer {token}"
    elif how == "cookie":
        headers["Cookie"] = f"butler_token_{url.split(':')[2].split('/')[0]}={token}"
    else:
        url += f"?{how}={token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            r.read(1 << 16)
    except urllib.error.HTTPError as exc:
        exc.read()
    except TimeoutError:
        pass  # an SSE stream opened with the token stays open: it was let in


def handshake(url: str, token: str) -> None:
    """Open the terminal's WebSocket with ``token`` in every way a script might."""
    attempts = [
        (f"{url}?token={token}", {}),  # refused: a query string is no credential
        (f"{url}?token={token}", {"origin": "http://evil.example"}),
        (f"{url}?ticket={token}&mode=control", {}),
        (url, {"additional_headers": {"Authorization": f"Bearer {token}"}}),
        (f"{url}?mode=admin&token={token}", {"additional_headers": {"Authorization": "x"}}),
    ]
    for target, options in attempts:
        try:
            connect(target, open_timeout=10, **options).close()
        except (InvalidStatus, WebSocketException, OSError):
            pass


async def test_the_daemons_log_holds_no_token_whatever_was_sent_where(roster: Path, schema_name):
    folder = write_butler(
        roster, "tester", port=free_port(), schema=schema_name, runtime=agent_runtime()
    )
    saved = roster / "session-server.json"
    steps = [
        {"save": str(saved)},
        {"tool": "status", "query": "?token={token}"},
        {"tool": "status", "query": "?ticket={token}&session=x"},
        {"tool": "list", "headers": {"Authorization": "Bearer {token}"}},
    ]
    ticket = secrets.token_urlsafe(32)  # a roster login's one-time ticket, or any secret
    port = int((folder / "butler.toml").read_text().split("port = ")[1].split()[0])
    with DebugDaemon(folder, port=port, database_url=TEST_DSN) as daemon:
        async with butler_client(f"{daemon.url}/mcp", timeout=120) as owner:
            answer = await owner.call_tool("trigger", {"prompt": json.dumps(steps)})
        assert answer.structured_content["success"], answer.structured_content
        server = json.loads(saved.read_text())
        session = server["headers"]["Authorization"].removeprefix("Bearer ")
        tokens = {"owner": TEST_TOKEN, "session": session, "ticket": ticket}
        for token in tokens.values():
            for route in ROUTES:
                for how in ("header", "cookie", "token", "ticket", "session"):
                    request(daemon.url + route, token, how)
            terminal = daemon.url.replace("http", "ws", 1) + f"/sessions/{MISSING}/terminal"
            handshake(terminal, token)
        request(f"{daemon.url}/?token={TEST_TOKEN}&next=/state", TEST_TOKEN, "header")
    log = daemon.logs()
    assert '"WebSocket /sessions/' in log  # the handshakes were logged, without their query
    for kind, token in tokens.items():
        assert token not in log, f"the {kind} token is in the daemon's log"
