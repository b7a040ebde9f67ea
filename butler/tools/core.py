"""Core tools of every butler: its key-value state and its status."""

from __future__ import annotations

import time
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import JsonValue

from butler import __version__
from butler.tools.context import ButlerContext


def register_core_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``state_*`` and ``status`` to ``mcp``."""

    @mcp.tool
    async def state_get(key: str) -> JsonValue:
        """Return the JSON value stored under ``key``, or null when there is none."""
        return await butler.state.get(key)

    @mcp.tool
    async def state_set(key: str, value: JsonValue) -> dict[str, Any]:
        """Store a JSON value under ``key``, replacing any previous value."""
        if value is None:
            raise ToolError("state_set: value must not be null; use state_delete to remove a key")
        await butler.state.set(key, value)
        return {"key": key, "stored": True}

    @mcp.tool
    async def state_list(prefix: str = "") -> dict[str, Any]:
        """Return every key starting with ``prefix`` and its value."""
        return await butler.state.list(prefix)

    @mcp.tool
    async def state_delete(key: str) -> dict[str, Any]:
        """Delete ``key``; says whether it existed."""
        return {"key": key, "deleted": await butler.state.delete(key)}

    @mcp.tool
    async def status() -> dict[str, Any]:
        """The butler's name, runtime, uptime, database health and sessions in flight."""
        return await status_of(butler)


async def status_of(butler: ButlerContext) -> dict[str, Any]:
    """The butler's status, shared by the ``status`` tool and ``GET /health``."""
    database = await butler.db.ping()
    spawner = butler.spawner
    return {
        "butler": butler.config.name,
        "status": "ok" if database else "degraded",
        "version": __version__,
        "database": database,
        "runtime": butler.config.runtime.type,
        "sandbox": spawner.sandbox,
        "sessions_in_flight": spawner.in_flight,
        "sessions_running": spawner.admission.running,
        "sessions_queued": spawner.admission.waiting,
        "accepting": spawner.admission.accepting,
        "uptime_s": round(time.time() - butler.started_at, 1),
    }
