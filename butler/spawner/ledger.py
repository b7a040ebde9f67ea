"""What the butler's own MCP server saw arriving for each running session.

Runtimes report their tool calls, but a runtime can crash before reporting,
or report under another name. The server records every call that carries a
session id here; the spawner merges both lists without duplicates.
"""

from __future__ import annotations

from opentelemetry.context import Context

from butler.runtimes.base import ToolCall


class ToolCallLedger:
    """Tool calls seen by the server, per open session id, and each session's trace."""

    def __init__(self) -> None:
        self._open: dict[str, list[ToolCall]] = {}
        self._traces: dict[str, Context] = {}

    def open(self, session_id: str, trace_context: Context | None = None) -> None:
        self._open[session_id] = []
        if trace_context is not None:
            self._traces[session_id] = trace_context

    def trace_context(self, session_id: str) -> Context | None:
        """The session's trace, so its tool calls join the trace of its trigger."""
        return self._traces.get(session_id)

    def is_open(self, session_id: str) -> bool:
        return session_id in self._open

    def record(self, session_id: str, call: ToolCall) -> bool:
        """Record a call for an open session; False when the id names none."""
        calls = self._open.get(session_id)
        if calls is None:
            return False
        calls.append(call)
        return True

    def close(self, session_id: str) -> list[ToolCall]:
        self._traces.pop(session_id, None)
        return self._open.pop(session_id, [])


def merge_tool_calls(reported: list[ToolCall], seen: list[ToolCall]) -> list[ToolCall]:
    """The runtime's calls in order, then any the server saw that the runtime did not report.

    Calls match on name and arguments, counted, so two identical calls stay two.
    """
    merged = list(reported)
    remaining: dict[str, int] = {}
    for call in reported:
        remaining[call.key()] = remaining.get(call.key(), 0) + 1
    for call in seen:
        if remaining.get(call.key(), 0) > 0:
            remaining[call.key()] -= 1
        else:
            merged.append(call)
    return merged
