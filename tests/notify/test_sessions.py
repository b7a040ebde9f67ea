"""A running session calls notify over MCP with its own token, as a runtime does."""

from __future__ import annotations

import json

import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.exceptions import ToolError

from butler.runtimes.base import Invocation, RuntimeResult
from tests.conftest import TEST_DSN
from tests.helpers import InProcessButler, butler_client
from tests.notify.conftest import deliveries, notify_table
from tests.servers.webhook import Webhook

pytestmark = pytest.mark.slow


async def chatty(invocation: Invocation) -> RuntimeResult:
    """A runtime that sends three messages through its butler's notify tool."""
    assert invocation.mcp is not None
    transport = StreamableHttpTransport(invocation.mcp.url, headers=invocation.mcp.headers)
    said = []
    async with Client(transport) as butler:
        for n in range(3):
            try:
                result = await butler.call_tool("notify", {"message": f"note {n}"})
                said.append(result.structured_content["channels"][0]["status"])
            except ToolError as exc:
                said.append(str(exc))
    return RuntimeResult(output=json.dumps(said))


async def test_a_session_sends_only_its_share_and_its_own_result_stands(
    make_config, scripted, webhook: Webhook
):
    config = make_config(notify_table({"hook": webhook.url()}, max_per_session=2))
    scripted.script = chatty
    async with InProcessButler(config.config_dir, database_url=TEST_DSN) as running:
        try:
            async with butler_client(f"{running.url}/mcp", timeout=60) as owner:
                called = await owner.call_tool("trigger", {"prompt": "Tell me three things."})
            result = called.structured_content
            rows = await deliveries(running.butler.db, result["session_id"])
        finally:
            await running.butler.notifier.stop()
    assert result["success"] is True, result["error"]
    assert json.loads(result["output"]) == [
        "delivered",
        "delivered",
        "notify: this session has sent 2 messages, the most [butler.notify] max_per_session "
        "allows; nothing more is sent",
    ]
    assert [b["message"] for b in await webhook.until(2)] == ["note 0", "note 1"]
    # The third is refused, not dropped: its row says why (and it counts toward no limit).
    assert [r["status"] for r in rows] == ["delivered", "delivered", "refused"]
    assert rows[2]["error"].startswith("this session has sent 2 messages")
    assert {r["source"] for r in rows} == {"tool"}
