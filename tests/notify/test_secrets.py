"""A channel's secret reaches the service and nothing else: no row, no log line, no page."""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path

import asyncpg
import pytest

from tests.conftest import TEST_DSN
from tests.helpers import REPO, TEST_TOKEN, DaemonProcess, butler_client, free_port, write_butler
from tests.notify.conftest import notify_table
from tests.notify.credentials import store_credential
from tests.servers.webhook import Webhook

pytestmark = pytest.mark.slow

SECRET = f"hooksecret{uuid.uuid4().hex}"
PROBE = REPO / "tests" / "sandbox" / "probe.py"


class DebugDaemon(DaemonProcess):
    """``butler run`` logging everything, Apprise's debug lines included if they leaked."""

    def argv(self) -> list[str]:
        return [*super().argv(), "--log-level", "debug", "--log-format", "json"]


def probe_butler(roster: Path, schema: str, extra: str) -> tuple[Path, int]:
    port = free_port()
    runtime = {
        "type": "command",
        "command": [sys.executable, "-I", "{cwd}/probe.py", "{prompt_file}", "{mcp_config}"],
    }
    folder = write_butler(roster, "keeper", port=port, schema=schema, runtime=runtime, extra=extra)
    shutil.copy(PROBE, folder / "probe.py")
    return folder, port


async def everything_stored(schema: str) -> str:
    """Every row of every table of the butler's schema, as text."""
    conn = await asyncpg.connect(TEST_DSN)
    try:
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", schema
        )
        dumps = []
        for table in tables:
            if table["table_name"] == "credentials":
                continue  # where the secret is kept, and the one place it may be
            rows = await conn.fetch(f'SELECT * FROM "{schema}"."{table["table_name"]}"')
            dumps.append(json.dumps([dict(r) for r in rows], default=str))
    finally:
        await conn.close()
    return "\n".join(dumps)


async def test_the_secret_reaches_the_service_and_no_row_log_line_or_page(
    roster: Path, schema_name: str, webhook: Webhook
):
    dead = free_port()  # nothing listens: this channel fails, and says why
    channels = {
        "hook": f"{webhook.url('/')}{{HOOK_SECRET}}",
        "dead": f"json://127.0.0.1:{dead}/{{HOOK_SECRET}}",
    }
    folder, port = probe_butler(roster, schema_name, notify_table(channels, retries=0))
    store_credential(folder, "HOOK_SECRET", SECRET)
    with DebugDaemon(folder, port=port, database_url=TEST_DSN) as daemon:
        plan = {"mcp": {"tool": "notify", "arguments": {"message": "Pills refilled."}}}
        async with butler_client(f"{daemon.url}/mcp", timeout=90) as owner:
            called = await owner.call_tool("trigger", {"prompt": json.dumps(plan)})
        result = called.structured_content
        assert result["success"], result["error"]
        page = _get(f"{daemon.url}/sessions/{result['session_id']}")
        api = _get(f"{daemon.url}/api/sessions/{result['session_id']}")
    assert webhook.paths == [f"/{SECRET}"]  # the service got it
    report = json.loads(result["output"])["mcp"]
    assert '\\"status\\":\\"delivered\\"' in report or '"status":"delivered"' in report
    assert "A Connection error occurred sending JSON notification" in report
    logs = daemon.logs()
    assert '"event": "notification delivered"' in logs and '"level": "debug"' in logs
    stored = await everything_stored(schema_name)
    assert "Pills refilled." in stored and "A Connection error occurred" in stored
    # The session's page lists each channel, and the failed one's error line.
    assert 'id="deliveries"' in page and "<code>dead</code>" in page and "<code>hook</code>" in page
    assert "not delivered: JSON: A Connection error occurred" in page
    for where, text in {"log": logs, "rows": stored, "page": page, "api": api}.items():
        assert SECRET not in text, f"the secret is in the {where}"


def _get(url: str) -> str:
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TEST_TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()
