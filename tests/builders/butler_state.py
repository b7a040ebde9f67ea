"""A butler's state read over MCP, as a builder left it."""

from __future__ import annotations

import asyncio

from tests.helpers import butler_client


def state_get(url: str, key: str) -> str:
    """A value of the butler's state, read over MCP as any client would."""

    async def go() -> str:
        async with butler_client(f"{url}/mcp") as client:
            stored = await client.call_tool("state_get", {"key": key})
        return stored.content[0].text

    return asyncio.run(go())
