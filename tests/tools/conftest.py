"""Tool tests: a butler's MCP server over a real database and an in-process fake runtime."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from butler.context import ButlerContext
from butler.http_limits import JsonRpcBodyLimit
from butler.server import build_app, build_mcp
from butler.store.state import StateStore
from tests.fakes.runtime import FakeAdapter
from tests.helpers import eventually, free_port


@pytest.fixture
def butler_mcp(make_spawner, db):
    def build(adapter=None):
        spawner = make_spawner(adapter or FakeAdapter())
        context = ButlerContext(
            config=spawner.config,
            db=db,
            state=StateStore(db),
            sessions=spawner.sessions,
            spawner=spawner,
        )
        return build_mcp(context)

    return build


@pytest.fixture
async def make_served(make_spawner, db) -> AsyncIterator[Any]:
    """Serve the butler's app (with the JSON-RPC body limit) on a free port, in this event
    loop, its butler.toml given ``extra``; its URL and its butler."""
    running: list[tuple[uvicorn.Server, asyncio.Task[None]]] = []

    async def serve(extra: str = "") -> tuple[str, ButlerContext]:
        spawner = make_spawner(extra=extra)
        butler = ButlerContext(
            config=spawner.config,
            db=db,
            state=StateStore(db),
            sessions=spawner.sessions,
            spawner=spawner,
        )
        port = free_port()
        app = JsonRpcBodyLimit(build_app(butler))
        server = uvicorn.Server(uvicorn.Config(app, port=port, log_config=None, lifespan="on"))
        task = asyncio.create_task(server.serve())
        running.append((server, task))

        def started() -> bool:
            assert not task.done(), task  # the server died while starting: say why
            return server.started

        await eventually(started, timeout=30)
        return f"http://127.0.0.1:{port}/mcp", butler

    yield serve
    for server, task in running:
        server.should_exit = True
        await task


@pytest.fixture
async def served(make_served) -> tuple[str, ButlerContext]:
    """The butler's app on a free port, in this event loop: its URL and its butler."""
    return await make_served()
