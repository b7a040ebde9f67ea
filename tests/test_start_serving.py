"""A start builds what a tool session needs, and every client is served right after /health.

The MCP SDK's per-version wire models are built at first use rather than at import
(:mod:`butler.adapters.mcp`, tested in tests/adapters/test_mcp.py);
:func:`butler.server.warm_up` builds a tool session's before ``/health`` answers. Speed
is measured in ``benchmarks/startup.py``; here, that nothing a client does stops working
for it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.helpers import DaemonProcess, butler_client, free_port, get_json, write_butler


async def _session(url: str, mode: str) -> tuple[str, set[str], str, list[str]]:
    """One client session: its protocol version, the tools, a status call, the prompts."""
    async with butler_client(url, mode=mode, timeout=30) as client:
        listed = {tool.name: tool.description or "" for tool in await client.list_tools()}
        # A tool's description is its whole docstring, its second paragraph included.
        assert listed["state_get"].startswith("Return the JSON value stored under ``key``")
        assert "With ``with_version``, return" in listed["state_get"]
        tools = set(listed)
        status = await client.call_tool("status", {})
        # Prompts are no part of what the start builds: built at this first use.
        prompts = [prompt.name for prompt in await client.list_prompts()]
        version = client.protocol_version
    return str(version), tools, json.dumps(status.structured_content), prompts


def test_right_after_health_clients_of_both_protocol_eras_list_and_call_tools(
    roster: Path, schema_name: str, pg_dsn: str
) -> None:
    # Claude Code and Codex shake hands (2025-11-25); FastMCP's client discovers (2026).
    port = free_port()
    folder = write_butler(roster, "eras", port=port, schema=schema_name)
    with DaemonProcess(folder, port=port, database_url=pg_dsn) as daemon:
        handshake = asyncio.run(_session(f"{daemon.url}/mcp", "legacy"))
        discovery = asyncio.run(_session(f"{daemon.url}/mcp", "auto"))
        over_sse = asyncio.run(_session(f"{daemon.url}/sse", "legacy"))
        # The dashboard's views load at the first page asked for; it answers like any other.
        code, listing = get_json(f"{daemon.url}/api/sessions")
    assert code == 200 and listing["count"] == 0, listing
    assert handshake[0] != discovery[0]  # two eras, each with its own wire models
    for version, tools, status, prompts in (handshake, discovery, over_sse):
        assert {"status", "trigger", "state_get"} <= tools, version
        assert '"eras"' in status, version
        assert prompts == [], version
