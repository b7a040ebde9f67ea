"""Core tools of every butler: its key-value state and its status.

A session a chat's sender started reads and writes its own share of the
state only (:mod:`.tenancy`).
"""

# No postponed annotations: FastMCP reads the argument types (and their bounds) at runtime.
import time
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import JsonValue

from butler import __version__
from butler.config.watch import restart_needed
from butler.context import ButlerContext
from butler.errors import UserError
from butler.store.outages import UNREACHABLE
from butler.tools.limits import IfVersion, StateKey, StatePrefix, StateValue
from butler.tools.tenancy import state_of


def register_core_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``state_*`` and ``status`` to ``mcp``."""

    @mcp.tool
    async def state_get(key: StateKey, with_version: bool = False) -> JsonValue:
        """Return the JSON value stored under ``key``, or null when there is none.

        With ``with_version``, return ``{"value": ..., "version": N}`` instead
        (version 0 when there is no value), for ``state_set(if_version=N)``.
        """
        state = state_of(butler)
        if with_version:
            value, version = await state.get_versioned(key)
            return {"value": value, "version": version}
        return await state.get(key)

    @mcp.tool
    async def state_set(
        key: StateKey, value: StateValue, if_version: IfVersion = None
    ) -> dict[str, Any]:
        """Store a JSON value under ``key``, replacing any previous value; return its version.

        With ``if_version``, store only while the key is still at that version
        (0: only while it does not exist); otherwise the call fails and nothing
        is stored, so a read-modify-write reads again and retries.
        """
        if value is None:
            raise ToolError("state_set: value must not be null; use state_delete to remove a key")
        try:
            version = await state_of(butler).set(key, value, if_version)
        except UserError as exc:
            raise ToolError(f"state_set: {exc}") from None
        return {"key": key, "stored": True, "version": version}

    @mcp.tool
    async def state_list(prefix: StatePrefix = "") -> dict[str, Any]:
        """Return every key starting with ``prefix`` and its value."""
        return await state_of(butler).list(prefix)

    @mcp.tool
    async def state_delete(key: StateKey) -> dict[str, Any]:
        """Delete ``key``; says whether it existed."""
        return {"key": key, "deleted": await state_of(butler).delete(key)}

    @mcp.tool
    async def status() -> dict[str, Any]:
        """The butler's name, runtime, uptime, database health, sessions and builders running."""
        return await status_of(butler)


async def status_of(butler: ButlerContext) -> dict[str, Any]:
    """The butler's status, shared by the ``status`` tool and ``GET /health``."""
    database = await butler.db.ping()
    builders = None
    if database:
        try:
            builders = await butler.builders.running()
        except UNREACHABLE:  # the database went away since the ping: say so, as the ping would
            database = False
    spawner = butler.spawner
    return {
        "butler": butler.config.name,
        "status": "ok" if database else "degraded",
        "version": __version__,
        "database": database,
        "runtime": butler.config.runtime.type,
        "sandbox": spawner.sandbox,
        "sessions_in_flight": spawner.in_flight,
        "sessions_running": spawner.running,
        "sessions_queued": spawner.waiting,
        "sessions_waiting_for_database": spawner.waiting_for_database,
        "accepting": spawner.accepting,
        "builders_running": builders,
        "builders_max_running": butler.config.butler.builders.max_running,
        "uptime_s": round(time.time() - butler.started_at, 1),
        "channels": butler.channels.states() if butler.channels else [],
        "restart_needed": restart_needed(butler.config),
    }
