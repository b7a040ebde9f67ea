"""Core tools through a real MCP client: any JSON value round-trips, null is refused."""

from __future__ import annotations

import pytest
from fastmcp import Client


@pytest.mark.parametrize("value", [[1, 2, 3], 65, "65", True, {"dose": "65mg"}, 0.5])
async def test_any_json_value_round_trips_with_its_type(butler_mcp, value):
    async with Client(butler_mcp()) as client:
        await client.call_tool("state_set", {"key": "k", "value": value})
        assert (await client.call_tool("state_get", {"key": "k"})).data == value
        assert (await client.call_tool("state_get", {"key": "missing"})).data is None


async def test_null_value_is_refused_with_a_clear_error(butler_mcp):
    async with Client(butler_mcp()) as client:
        result = await client.call_tool(
            "state_set", {"key": "k", "value": None}, raise_on_error=False
        )
    assert result.is_error
    assert "value must not be null; use state_delete" in result.content[0].text
