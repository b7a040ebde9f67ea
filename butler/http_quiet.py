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

Nor does one caller keep one connection: the MCP client closes the connection
of each reply that came as an event stream, and follows up on a new one. The
protocol version the clients speak now names no session either. So
:class:`Traffic` notes when each connection last carried an MCP request (its
start or its end), and once the sessions are drained the server stops when
every such connection is closed by its client or has been silent for
:data:`IDLE_S` (uvicorn's keep-alive timeout: it would close it then anyway),
and no request is in flight or began within :data:`QUIET_S`. A stock client
closes its connections when done, so the common stop waits for nobody. The
wait is bounded (the butler's ``shutdown_timeout_s``, at least
:data:`LIMIT_FLOOR_S`): a caller cannot hold the stop open. Every request is
served as usual meanwhile: a running session's own tool calls come in on new
connections, and new triggers are refused by the spawner with a reason the
caller reads.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection

from starlette.types import ASGIApp, Receive, Scope, Send

#: No request at all for this long (besides each connection being done).
QUIET_S = 1.0
#: The shortest bound on the wait, whatever ``shutdown_timeout_s`` says.
LIMIT_FLOOR_S = 5.0
#: A caller keeping its connection open is done after this long silent (uvicorn's
#: default keep-alive timeout, after which it closes the connection).
IDLE_S = 5.0
#: Connections noted before the stale ones are forgotten.
KEEP_PEERS = 1024
#: Where MCP requests go (streamable HTTP; the SSE transport's messages).
MCP_PATHS = ("/mcp", "/messages")
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
    """ASGI middleware: counts the HTTP requests in flight, and notes when each
    connection last carried an MCP request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.in_flight = 0
        self.last_seen = time.monotonic()
        #: Each connection's last MCP request start or end (monotonic).
        self.peers: dict[Peer, float] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or long_lived(scope):
            await self.app(scope, receive, send)
            return
        client = peer(scope) if str(scope.get("path", "")).startswith(MCP_PATHS) else None
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
        self.peers[client] = now
        if len(self.peers) > KEEP_PEERS:
            self.peers = {p: t for p, t in self.peers.items() if now - t < IDLE_S}

    def done(
        self,
        now: float,
        open_peers: Collection[Peer],
        idle_s: float = IDLE_S,
        since: float = float("-inf"),
    ) -> bool:
        """No request in flight or just ended, and every connection that carried an MCP
        request since the drain began (``since``) is closed or has gone silent. A
        connection whose calls were all answered before the drain owes nobody a reply:
        an idle client holding its connection open does not hold the stop."""
        if self.in_flight or now - self.last_seen < QUIET_S:
            return False
        return all(
            p not in open_peers or now - t >= idle_s or t < since for p, t in self.peers.items()
        )

    async def settled(
        self,
        open_peers: Callable[[], Collection[Peer]],
        limit_s: float,
        idle_s: float = IDLE_S,
        since: float = float("-inf"),
    ) -> None:
        """Return once :meth:`done` (``open_peers`` says which connections are open;
        ``since``, when the drain began), or after ``limit_s`` (at least
        :data:`LIMIT_FLOOR_S`)."""
        deadline = time.monotonic() + max(limit_s, LIMIT_FLOOR_S)
        while time.monotonic() < deadline:
            if self.done(time.monotonic(), open_peers(), idle_s, since):
                return
            await asyncio.sleep(POLL_S)
