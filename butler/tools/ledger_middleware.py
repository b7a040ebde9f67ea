"""Server-side record of tool calls, per runtime session, and the session's tool list.

A runtime reaches its butler with its session's capability token; the token
guard (:mod:`butler.security.http`) resolves it to the session id, and only
that says which session a call belongs to. Each tool call of an open session
is written to the spawner's ledger. When ``[butler.runtime] tools`` is set, a
session sees and may call only those tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import Middleware, MiddlewareContext

from butler.runtimes.base import ToolCall
from butler.security.caller import current_caller
from butler.spawner.ledger import ToolCallLedger
from butler.telemetry import tracer


def calling_session(ledger: ToolCallLedger) -> str | None:
    """The open session of this butler making the current request, if any."""
    session_id = current_caller().session_id
    if session_id and ledger.is_open(session_id):
        return session_id
    return None


class LedgerMiddleware(Middleware):
    """Record every tool call that arrives for an open session; hold sessions to their tools."""

    def __init__(self, ledger: ToolCallLedger, tools: Sequence[str] | None = None) -> None:
        self.ledger = ledger
        self.tools = None if tools is None else frozenset(tools)

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        listed = await call_next(context)
        if self.tools is None or not current_caller().is_session:
            return listed
        return [tool for tool in listed if tool.name in self.tools]

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        name = context.message.name
        caller = current_caller()
        if caller.is_session and self.tools is not None and name not in self.tools:
            allowed = ", ".join(sorted(self.tools)) or "none"
            raise ToolError(
                f"tool {name!r} is not allowed for this butler's sessions: "
                f"[butler.runtime] tools = [{allowed}]"
            )
        session_id = calling_session(self.ledger)
        if session_id is None:
            return await call_next(context)
        arguments = dict(context.message.arguments or {})
        # The runtime knows nothing of our trace; the session id ties its call to it.
        with tracer().start_as_current_span(
            f"butler.tool_call {name}",
            context=self.ledger.trace_context(session_id),
            attributes={"butler.session_id": session_id, "gen_ai.tool.name": name},
        ):
            try:
                result = await call_next(context)
            except Exception as exc:
                call = ToolCall(name, arguments, error=str(exc)[:500], source="server")
                self.ledger.record(session_id, call)
                raise
        self.ledger.record(session_id, ToolCall(name, arguments, source="server"))
        return result
