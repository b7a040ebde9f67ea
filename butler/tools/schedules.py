"""Schedule tools: list the butler's schedules, run one now, and ``tick``."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from butler.context import ButlerContext
from butler.errors import ButlerError
from butler.scheduler import Scheduler
from butler.security.caller import current_caller

#: Why ``schedule_run(wait=true)`` from a session answered without the result.
QUEUED = (
    "every session slot is busy (one of them is yours), so this call does not wait: the "
    "schedule's session runs once a slot is free (session_list finds it)"
)


def register_schedule_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``schedule_list``, ``schedule_run`` and ``tick`` to ``mcp``."""

    def scheduler() -> Scheduler:
        if butler.scheduler is None:
            raise ToolError("this butler runs no scheduler")
        return butler.scheduler

    def calling_session() -> str | None:
        """The session asking, if one is: what it fires is its child, in its chain."""
        return current_caller().session_id

    @mcp.tool
    async def schedule_list() -> list[dict[str, Any]]:
        """Every schedule: name, cron, timezone, prompt, when it last fired, when it is next due."""
        return await scheduler().listing()

    @mcp.tool
    async def schedule_run(name: str, wait: bool = False) -> dict[str, Any]:
        """Fire the schedule ``name`` now, whether due or not.

        Its session runs in the background with trigger source
        ``schedule:<name>``; with ``wait`` the call returns the session's result.
        """
        caller = calling_session()
        # A session waiting while no slot is free would wait on its own slot.
        queued = wait and caller is not None and not butler.spawner.slot_free
        try:
            fired, result = await scheduler().run_now(name, wait=wait and not queued, caller=caller)
        except ButlerError as exc:
            raise ToolError(str(exc)) from None
        answer = fired.to_json()
        if result is not None:
            answer["result"] = result.to_dict()
        if queued:
            answer["queued"] = QUEUED
        return answer

    @mcp.tool
    async def tick() -> dict[str, Any]:
        """Fire every schedule that is due now, for an external heartbeat; return what fired.

        The butler's own clock fires schedules too; a slot fires once
        whichever of the two gets to it first.
        """
        fired = await scheduler().tick(via="tick", caller=calling_session())
        return {"fired": [f.to_json() for f in fired]}
