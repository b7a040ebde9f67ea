"""What each running session's runtime says it is doing, as it does it.

A runtime's progress lines ("calling Bash", "calling mcp__butler__state_set")
go to whoever triggered the session. They are kept here too, for each running
session and bounded, so that someone else watching it (``butler logs
--follow``, through ``session_get``) sees its tool calls as they happen; the
whole record (arguments, errors) is written when the session ends. The
runtime's own text (:class:`~butler.runtimes.base.Said`) goes on to the
caller as it is written, and is not kept here: it is the answer, recorded
with the session.
"""

from __future__ import annotations

from butler.runtimes.base import ProgressSink, Said

#: At most this many lines kept per session, each at most this long (a runtime's words).
MAX_LINES = 500
MAX_LINE = 200


class Activity:
    """Progress lines of the running sessions, by session id."""

    def __init__(self) -> None:
        self._open: dict[str, list[str]] = {}

    def watch(self, session_id: str, progress: ProgressSink | None) -> ProgressSink:
        """A sink keeping each line for ``session_id`` and passing it on to ``progress``."""
        lines = self._open.setdefault(session_id, [])

        async def sink(message: str) -> None:
            if len(lines) < MAX_LINES and not isinstance(message, Said):
                lines.append(" ".join(str(message).split())[:MAX_LINE])
            if progress is not None:
                await progress(message)

        return sink

    def of(self, session_id: str) -> list[str] | None:
        """The lines so far of a running session; None when it is not running here."""
        lines = self._open.get(session_id)
        return list(lines) if lines is not None else None

    def close(self, session_id: str) -> None:
        self._open.pop(session_id, None)
