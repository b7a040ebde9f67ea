"""Serving on after a drain until the callers whose calls were running are done.

A caller's reply is not its last request: a stock MCP client re-lists the
tools to check a tool's result against its output schema right after the
result arrives, may call more tools, then closes its connection. On a loaded
machine those follow-ups come seconds after the reply. Stopping once the
server had been silent for a moment (what this did first: 1 s, at most 5 s)
let a slow caller's next request meet a closed listener or a connection
closed under it: ``ConnectError`` or ``ReadError`` although its session
succeeded (issue 35: 7 of 32 callers). Silence of the whole server says
nothing about one caller.

So :class:`Traffic` remembers, when the drain begins, the connections with a
request in flight: the callers owed a reply. (The MCP protocol version the
clients speak now names no session, so the caller is its connection.) The
server stops once each of them is closed by its client, or has had no request
for :data:`IDLE_OWED_S` after its last answer (uvicorn's keep-alive timeout: it
closes such a connection anyway); and no request is in flight or began within
:data:`QUIET_S` (a caller of the SSE transport, whose reply comes on its
long-lived stream, follows up at once). The wait is bounded (the butler's
``shutdown_timeout_s``, at least :data:`LIMIT_FLOOR_S`): a caller cannot hold
the stop open. Other requests are served as usual meanwhile: a running
session's own tool calls come in on new connections, and new triggers are
refused by the spawner with a reason the caller reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection

from starlette.types import ASGIApp, Receive, Scope, Send

#: No request at all for this long (besides the owed callers being done).
QUIET_S = 1.0
#: The shortest bound on the wait, whatever ``shutdown_timeout_s`` says.
LIMIT_FLOOR_S = 5.0
#: An owed caller keeping its connection open is done after this long silent
#: (uvicorn's default keep-alive timeout, after which it closes the connection).
IDLE_OWED_S = 5.0
#: How often :meth:`Traffic.settled` looks.
POLL_S = 0.05

#: A connection, by its peer's address.
Peer = tuple[str, int]


def long_lived(scope: Scope) -> bool:
    """A stream a client keeps open (MCP's GET stream, the SSE transport); never "done"."""
    if scope.get("method") != "GET":
        return False
    headers = dict(scope.get("headers") or [])
    return b"text/event-stream" in headers.get(b"accept", b"")


def peer(scope: Scope) -> Peer | None:
    client = scope.get("client")
    return (str(client[0]), int(client[1])) if client else None


class Traffic:
    """ASGI middleware: counts the HTTP requests in flight, per connection, and after
    :meth:`draining` follows the connections owed a reply until they are done."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.in_flight = 0
        self.last_seen = time.monotonic()
        #: Requests in flight per connection.
        self.busy: dict[Peer, int] = {}
        #: Once draining: each owed connection's last request start or end (monotonic).
        self.owed: dict[Peer, float] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or long_lived(scope):
            await self.app(scope, receive, send)
            return
        client = peer(scope)
        self._moved(client, +1)
        try:
            await self.app(scope, receive, send)
        finally:
            self._moved(client, -1)  # its caller may follow up on the answer

    def _moved(self, client: Peer | None, step: int) -> None:
        self.in_flight += step
        now = self.last_seen = time.monotonic()
        if client is None:
            return
        left = self.busy.get(client, 0) + step
        if left > 0:
            self.busy[client] = left
        else:
            self.busy.pop(client, None)
        if client in self.owed:
            self.owed[client] = now

    def draining(self) -> None:
        """The drain begins: every connection with a request in flight is owed its reply."""
        now = time.monotonic()
        for client in self.busy:
            self.owed.setdefault(client, now)

    def done(self, now: float, open_peers: Collection[Peer], idle_s: float = IDLE_OWED_S) -> bool:
        """No request in flight or just ended, and every owed connection is closed or
        has gone silent."""
        if self.in_flight or now - self.last_seen < QUIET_S:
            return False
        return all(c not in open_peers or now - last >= idle_s for c, last in self.owed.items())

    async def settled(
        self,
        open_peers: Callable[[], Collection[Peer]],
        limit_s: float,
        idle_s: float = IDLE_OWED_S,
    ) -> None:
        """Return once :meth:`done` (``open_peers`` says which connections are open), or
        after ``limit_s`` (at least :data:`LIMIT_FLOOR_S`)."""
        deadline = time.monotonic() + max(limit_s, LIMIT_FLOOR_S)
        while time.monotonic() < deadline:
            if self.done(time.monotonic(), open_peers(), idle_s):
                return
            await asyncio.sleep(POLL_S)
