"""FastMCP's Host/Origin guard, applied to WebSocket handshakes as well as HTTP requests.

The guard looks only at ``http`` scopes and lets anything else through, so
a page on another site could open a WebSocket to the butler and ride the
owner's cookie. Here a handshake is checked by the very same guard, shown
as the plain GET it is on the wire (``ws``/``wss`` read as ``http``/``https``),
and a refusal goes back as the handshake's HTTP denial.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastmcp.server.http import HostOriginGuardMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The scheme an Origin header carries for a handshake made with each WebSocket scheme.
HTTP_SCHEME = {"ws": "http", "wss": "https"}
_PASSED = "butler.handshake_passed"


class GuardEveryScope:
    """ASGI middleware: FastMCP's Host/Origin guard in strict mode, for HTTP and WebSocket."""

    def __init__(
        self, app: ASGIApp, *, allowed_hosts: Sequence[str], allowed_origins: Sequence[str]
    ) -> None:
        self.app = app
        options = {"allowed_hosts": allowed_hosts, "allowed_origins": allowed_origins}
        self.guard = HostOriginGuardMiddleware(app, mode="strict", **options)
        self.handshakes = HostOriginGuardMiddleware(_mark_passed, mode="strict", **options)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.guard(scope, receive, send)
            return
        as_get = {
            **scope,
            "type": "http",
            "method": "GET",
            "scheme": HTTP_SCHEME.get(scope.get("scheme", "ws"), "http"),
        }

        async def deny(message: Message) -> None:
            await send({**message, "type": f"websocket.{message['type']}"})

        await self.handshakes(as_get, receive, deny)
        if as_get.get(_PASSED):
            await self.app(scope, receive, send)


async def _mark_passed(scope: Scope, _receive: Receive, _send: Send) -> None:
    scope[_PASSED] = True
