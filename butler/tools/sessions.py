"""Session tools: ``trigger`` a session and read recorded ones.

A session a chat's sender started sees the sessions of its own conversation
only (:mod:`.tenancy`); what it triggers belongs to that conversation too.
"""

# No postponed annotations: FastMCP reads the argument types (and their bounds) at runtime.
from typing import Any

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError

from butler.context import ButlerContext
from butler.errors import ButlerError
from butler.runtimes.base import ProgressSink, Said
from butler.security.caller import current_caller, request_origin
from butler.spawner.result import SpawnerResult
from butler.spawner.spawner import TriggerRequest
from butler.store.session_ids import AmbiguousId
from butler.store.sessions import parse_position, position
from butler.tools.limits import (
    ListLimit,
    MaxTurns,
    Name,
    SessionStatus,
    optional_text,
    prompt_text,
    timeout_seconds,
)
from butler.tools.tenancy import current_tenant, visible


def register_session_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``trigger``, ``session_get`` and ``session_list`` to ``mcp``."""
    Prompt = prompt_text(butler.config.butler.max_prompt_bytes)
    ContextText = optional_text(butler.config.butler.max_prompt_bytes)
    Timeout = timeout_seconds(butler.config.runtime.timeout_s)

    @mcp.tool
    async def trigger(
        prompt: Prompt,
        context: ContextText = None,
        max_turns: MaxTurns = None,
        timeout_s: Timeout = None,
        ctx: Context | None = None,
    ) -> SpawnerResult:
        """Run a session of this butler's agent runtime on ``prompt`` and return its result.

        ``context`` is prepended to the prompt. From a session while no slot is free,
        the session is queued and the answer names it at once (no wait on itself).
        """
        origin = request_origin(current_caller())
        request = TriggerRequest(
            prompt=prompt,
            context=context,
            max_turns=max_turns,
            timeout_s=timeout_s,
            **origin,
        )
        try:
            return await butler.spawner.trigger(request, reporter(ctx))
        except ButlerError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool
    async def session_get(session_id: str) -> dict[str, Any]:
        """One session's record: prompt, output, tool calls, usage, timing and ``deliveries``.

        ``session_id`` may be the start of the id (4 hex digits or more); while it runs,
        ``activity`` too: what its runtime has said it is doing so far."""
        return await session_record(butler, session_id)

    @mcp.tool
    async def session_list(
        limit: ListLimit = 20,
        status: SessionStatus = None,
        trigger_source: Name = None,
        before: str | None = None,
    ) -> list[dict[str, Any]]:
        """Recent sessions, newest first, optionally by status or trigger source.

        Each row's ``position`` given as ``before`` lists the sessions older than it.
        """
        return await list_sessions(butler, limit, status, trigger_source, before)


async def found_session(butler: ButlerContext, given: str) -> dict[str, Any]:
    """The session whose id is ``given`` (for the owner, or that starts with it); a
    ToolError saying why not.

    Another person's session is "not found" to a chat's session, as one that does not
    exist: neither its words nor its existence reach it. So a chat's session names a
    session whole: the start of an id would tell it how many others share that start.
    """
    if current_tenant() is None:
        try:
            row = await butler.sessions.find(given)
        except AmbiguousId as exc:
            raise ToolError(str(exc)) from None
    else:
        row = await butler.sessions.get(given)
        if row is not None and not await visible(butler, str(row["id"])):
            row = None
    if row is None:
        raise ToolError(f"session {given} not found")
    return row


async def session_record(butler: ButlerContext, session_id: str) -> dict[str, Any]:
    """``session_get``: the row, its deliveries, and while it runs its activity so far."""
    row = await found_session(butler, session_id)
    deliveries = await butler.notifier.store.for_session(row["id"])
    activity = butler.spawner.activity.of(str(row["id"]))
    return {**row, "deliveries": deliveries, **({"activity": activity} if activity else {})}


async def list_sessions(
    butler: ButlerContext,
    limit: int,
    status: str | None,
    trigger_source: str | None,
    before: str | None,
) -> list[dict[str, Any]]:
    """``session_list``: a page of sessions, each with the position that pages past it."""
    try:
        after = parse_position("before", before) if before is not None else None
    except ValueError as exc:
        raise ToolError(f"session_list: {exc}") from None
    rows = await butler.sessions.list(
        limit=limit,
        status=status,
        trigger_source=trigger_source,
        before=after,
        tenant=current_tenant(),
    )
    keep = (
        "id",
        "status",
        "trigger_source",
        "runtime",
        "created_at",
        "duration_ms",
        "cost_usd",
        "error",
    )
    return [{**{k: r[k] for k in keep}, "position": position(r)} for r in rows]


def reporter(ctx: Context | None) -> ProgressSink:
    """The trigger's progress sink: each status line as an MCP progress notification to a
    caller that asked for them. The runtime's own text is not one (it is in the result)."""
    step = 0

    async def progress(message: str) -> None:
        nonlocal step
        if isinstance(message, Said) or ctx is None:
            return
        step += 1
        await ctx.report_progress(step, None, message)

    return progress
