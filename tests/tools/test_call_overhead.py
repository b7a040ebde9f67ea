"""What a tool call costs the daemon beyond the tool: no hidden listing of every tool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import mcp.server._streamable_http_modern as modern_http
import pytest
import uvicorn

from butler.context import ButlerContext
from butler.server import build_app
from butler.store.state import StateStore
from tests.helpers import butler_client, eventually, free_port


@pytest.fixture
async def served(make_spawner, db) -> AsyncIterator[str]:
    """The butler's app on a free port, in this event loop, started as the daemon starts it."""
    spawner = make_spawner()
    butler = ButlerContext(
        config=spawner.config,
        db=db,
        state=StateStore(db),
        sessions=spawner.sessions,
        spawner=spawner,
    )
    port = free_port()
    app = build_app(butler)
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_config=None, lifespan="on"))
    task = asyncio.create_task(server.serve())

    def started() -> bool:
        assert not task.done(), task  # the server died while starting: say why
        return server.started

    await eventually(started, timeout=30)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await task


async def test_a_tool_call_with_arguments_does_not_list_every_tool_first(served, monkeypatch):
    """The MCP SDK ran a whole tools/list per call to check Mcp-Param headers: half its CPU."""
    listings = []
    original = modern_http._tool_input_schema

    async def counted(*args, **kwargs):
        listings.append(args[-1])
        return await original(*args, **kwargs)

    monkeypatch.setattr(modern_http, "_tool_input_schema", counted)
    async with butler_client(served, timeout=30) as client:
        for key in ("a", "b", "c"):
            await client.call_tool("state_set", {"key": key, "value": 1})
        assert (await client.call_tool("state_get", {"key": "b"})).structured_content
    assert listings == []
