"""What a tool call costs the daemon beyond the tool: no hidden listing of every tool."""

from __future__ import annotations

import mcp.server._streamable_http_modern as modern_http

from tests.helpers import butler_client


async def test_a_tool_call_with_arguments_does_not_list_every_tool_first(served, monkeypatch):
    """The MCP SDK ran a whole tools/list per call to check Mcp-Param headers: half its CPU."""
    listings = []
    original = modern_http._tool_input_schema

    async def counted(*args, **kwargs):
        listings.append(args[-1])
        return await original(*args, **kwargs)

    monkeypatch.setattr(modern_http, "_tool_input_schema", counted)
    url, _ = served
    async with butler_client(url, timeout=30) as client:
        for key in ("a", "b", "c"):
            await client.call_tool("state_set", {"key": key, "value": 1})
        assert (await client.call_tool("state_get", {"key": "b"})).structured_content
    assert listings == []
