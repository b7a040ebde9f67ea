"""Through the tools: a runtime's NUL output reaches the caller and frees its dedupe key."""

from __future__ import annotations

import asyncio
import time

from fastmcp import Client

from butler.config import RuntimeConfig
from butler.runtimes.registry import get_adapter


async def test_nul_output_is_returned_recorded_and_the_dedupe_key_reused(butler_mcp):
    adapter = get_adapter("command", RuntimeConfig(type="command", command=["printf", "a\\000b"]))
    async with Client(butler_mcp(adapter)) as client:
        result = await client.call_tool("trigger", {"prompt": "say it"})
        assert result.structured_content["output"] == "a\x00b"
        first = await client.call_tool("session_start", {"prompt": "x", "dedupe_key": "daily"})
        first_id = first.structured_content["session_id"]
        deadline = time.monotonic() + 30
        while True:  # a contract caller polls the recorded status
            status = await client.call_tool("session_status", {"session_id": first_id})
            if status.structured_content["status"] not in ("pending", "active"):
                break
            assert time.monotonic() < deadline, "the session never ended"
            await asyncio.sleep(0.05)
        again = await client.call_tool("session_start", {"prompt": "x", "dedupe_key": "daily"})
    assert status.structured_content["status"] == "completed"
    assert status.structured_content["metadata"]["sanitised"] == ["output"]
    assert again.structured_content["started"] is True
    assert again.structured_content["session_id"] != first_id
