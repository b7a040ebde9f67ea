"""Server-side record of tool calls, per runtime session.

A runtime reaches its butler with the session id in an ``X-Butler-Session``
header (both transports) and, over streamable HTTP, in the ``session`` query
parameter. Each tool call carrying an open session id is written to the
spawner's ledger.
"""

from __future__ import annotations

from typing import Any

from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import Middleware, MiddlewareContext

from butler.runtimes.base import ToolCall
from butler.spawner.invocation import SESSION_HEADER
from butler.spawner.ledger import ToolCallLedger
from butler.telemetry import tracer


def request_session_id() -> str | None:
    """The butler session id the current HTTP request carries, if any."""
    try:
        request = get_http_request()
    except RuntimeError:
        return None
    return request.headers.get(SESSION_HEADER) or request.query_params.get("session")


def calling_session(ledger: ToolCallLedger) -> str | None:
    """The open session of this butler making the current request, if any."""
    session_id = request_session_id()
    if session_id and ledger.is_open(session_id):
        return session_id
    return None


class LedgerMiddleware(Middleware):
    """Record every tool call that arrives for an open session."""

    def __init__(self, ledger: ToolCallLedger) -> None:
        self.ledger = ledger

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        session_id = calling_session(self.ledger)
        if session_id is None:
            return await call_next(context)
        name = context.message.name
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
