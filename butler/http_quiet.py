"""Serving on after a drain until the callers' follow-up requests are answered.

A caller's reply is not its last request: a stock MCP client re-lists the
tools to check a tool's result against its output schema right after the
result arrives, then ends its MCP session with a DELETE. Shut down the moment
the sessions are drained and those requests meet a closed connection or
listener, and the caller sees ``ConnectError``/``ReadError`` although its
session succeeded. :class:`Traffic` counts the requests in flight so the
server stops only once they are answered and none has started for a moment.
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import ASGIApp, Receive, Scope, Send

#: No new request for this long: the callers are done.
QUIET_S = 1.0
#: The longest a stop waits for quiet (a client that keeps calling cannot hold it open).
QUIET_LIMIT_S = 5.0


def long_lived(scope: Scope) -> bool:
    """A stream a client keeps open (MCP's GET stream, the SSE transport); never "done"."""
    if scope.get("method") != "GET":
        return False
    headers = dict(scope.get("headers") or [])
    return b"text/event-stream" in headers.get(b"accept", b"")


class Traffic:
    """ASGI middleware: counts the HTTP requests in flight and when one last began or ended."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.in_flight = 0
        self.last_seen = time.monotonic()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or long_lived(scope):
            await self.app(scope, receive, send)
            return
        self.in_flight += 1
        self.last_seen = time.monotonic()
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self.last_seen = time.monotonic()  # its caller may follow up on the answer

    async def quiet(self, quiet_s: float = QUIET_S, limit_s: float = QUIET_LIMIT_S) -> None:
        """Return once no request is in flight or ended within ``quiet_s`` (at most ``limit_s``)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            idle = time.monotonic() - self.last_seen
            if self.in_flight == 0 and idle >= quiet_s:
                return
            await asyncio.sleep(min(0.05, max(deadline - time.monotonic(), 0)))
