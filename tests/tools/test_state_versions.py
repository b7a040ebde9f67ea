"""state_set(if_version=N): concurrent read-modify-write loses no update."""

from __future__ import annotations

import asyncio

from fastmcp import Client
from fastmcp.exceptions import ToolError


async def test_versions_count_writes_and_a_stale_write_is_refused(butler_mcp):
    async with Client(butler_mcp()) as client:
        empty = await client.call_tool("state_get", {"key": "c", "with_version": True})
        assert empty.structured_content["result"] == {"value": None, "version": 0}
        first = await client.call_tool("state_set", {"key": "c", "value": 1, "if_version": 0})
        assert first.structured_content["version"] == 1
        second = await client.call_tool("state_set", {"key": "c", "value": 2})
        assert second.structured_content["version"] == 2
        stale = await client.call_tool(
            "state_set", {"key": "c", "value": 99, "if_version": 1}, raise_on_error=False
        )
        got = await client.call_tool("state_get", {"key": "c", "with_version": True})
        plain = await client.call_tool("state_get", {"key": "c"})
    assert stale.is_error
    line = stale.content[0].text
    assert line.startswith("state_set: key 'c' is at version 2, not 1 (if_version)")
    assert "\n" not in line
    assert got.structured_content["result"] == {"value": 2, "version": 2}
    assert plain.data == 2  # without with_version, state_get answers as before


async def test_fifty_concurrent_counters_end_at_fifty(butler_mcp):
    mcp = butler_mcp()
    conflicts = 0

    async def increment() -> None:
        nonlocal conflicts
        async with Client(mcp) as client:
            while True:
                got = await client.call_tool("state_get", {"key": "n", "with_version": True})
                current = got.structured_content["result"]
                try:
                    await client.call_tool(
                        "state_set",
                        {
                            "key": "n",
                            "value": (current["value"] or 0) + 1,
                            "if_version": current["version"],
                        },
                    )
                    return
                except ToolError:
                    conflicts += 1

    await asyncio.gather(*(increment() for _ in range(50)))
    async with Client(mcp) as client:
        final = await client.call_tool("state_get", {"key": "n", "with_version": True})
    assert final.structured_content["result"] == {"value": 50, "version": 50}
    assert conflicts > 0  # the race really happened, and the retries resolved it
