"""SIGTERM while a session runs: new triggers refused, the session drained, then cancelled."""

from __future__ import annotations

import asyncio
import signal

import pytest
from fastmcp import Client

from tests.conftest import TEST_DSN
from tests.fakes.runtime import FAKE_CLAUDE
from tests.helpers import DaemonProcess, eventually, free_port, write_butler

pytestmark = pytest.mark.slow


async def test_sigterm_drains_then_cancels_and_records_it(roster, schema_name):
    port = free_port()
    folder = write_butler(
        roster,
        "drainer",
        port=port,
        schema=schema_name,
        runtime={"cli_path": str(FAKE_CLAUDE)},
        extra="",
    )
    toml = folder / "butler.toml"
    toml.write_text(
        toml.read_text().replace("[butler]\n", "[butler]\nshutdown_timeout_s = 1.5\n", 1)
    )
    daemon = DaemonProcess(
        folder, port=port, database_url=TEST_DSN, env={"ANTHROPIC_API_KEY": "sk-test"}
    ).start()
    try:
        async with Client(f"{daemon.url}/mcp", timeout=60) as client:
            running = asyncio.create_task(client.call_tool("trigger", {"prompt": "MODE:hang"}))

            async def running_now() -> bool:
                status = await client.call_tool("status", {})
                return status.structured_content["sessions_running"] >= 1

            await eventually(running_now)
            daemon.proc.send_signal(signal.SIGTERM)
            refused = await client.call_tool("trigger", {"prompt": "late"})
            assert refused.structured_content["success"] is False
            assert "shutting down" in refused.structured_content["error"]
            result = (await running).structured_content
        assert result["success"] is False and "cancelled" in result["error"]
        assert daemon.proc.wait(timeout=30) == 0
    finally:
        daemon.stop()
    import asyncpg

    conn = await asyncpg.connect(TEST_DSN)
    try:
        rows = await conn.fetch(f'SELECT status, error FROM "{schema_name}".sessions')
    finally:
        await conn.close()
    assert [(r["status"], r["error"]) for r in rows] == [
        ("cancelled", "cancelled: the butler is shutting down")
    ]
    assert "partial before hang" not in daemon.logs()  # output never reaches logs
