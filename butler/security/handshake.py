"""FastMCP's Host/Origin guard, applied to WebSocket handshakes as well as HTTP requests.

The guard looks only at ``http`` scopes and lets anything else through, so
a page on another site could open a WebSocket to the butler and ride the
owner's cookie. Here a handshake is checked by the very same guard, shown
as the plain GET it is on the wire (``ws``/``wss`` read as ``http``/``https``),
and a refusal goes back as the handshake's HTTP denial.

A handshake is held to more than the guard's rule, which admits any loopback
Origin when the butler listens on loopback. Unlike a fetch, a WebSocket
needs no CORS consent to be read, and cookies ignore ports (SameSite treats
``localhost:3000`` as the same site), so any local web server's page could
otherwise drive a builder's terminal. A browser's handshake must come from
the butler's own origin or one of ``allowed_origins``; a client without an
Origin (not a browser) still needs the bearer token.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from fastmcp.server.http import HostOriginGuardMiddleware
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: The scheme an Origin header carries for a handshake made with each WebSocket scheme.
HTTP_SCHEME = {"ws": "http", "wss": "https"}
DEFAULT_PORT = {"http": 80, "https": 443}
_PASSED = "butler.handshake_passed"


class GuardEveryScope:
    """ASGI middleware: FastMCP's Host/Origin guard in strict mode, for HTTP and WebSocket."""

    def __init__(
        self, app: ASGIApp, *, allowed_hosts: Sequence[str], allowed_origins: Sequence[str]
    ) -> None:
        self.app = app
        self.allowed_origins = [normalize_origin(o) for o in allowed_origins]
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
        if not as_get.get(_PASSED):
            return
        headers = Headers(scope=scope)
        origin, own = headers.get("origin"), f"{as_get['scheme']}://{headers.get('host', '')}"
        if origin is not None and not self._own(origin, own):
            await PlainTextResponse("Forbidden Origin", 403)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _own(self, origin: str, own: str) -> bool:
        origin = normalize_origin(origin)
        if origin == normalize_origin(own):
            return True
        return any(p == "*" or fnmatchcase(origin, p) for p in self.allowed_origins)


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]`` in lower case, the scheme's default port left out."""
    text = origin.strip().rstrip("/").lower()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    if not parts.scheme or not parts.hostname or parts.path or parts.query:
        return text
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is None or port == DEFAULT_PORT.get(parts.scheme):
        return f"{parts.scheme}://{host}"
    return f"{parts.scheme}://{host}:{port}"


async def _mark_passed(scope: Scope, _receive: Receive, _send: Send) -> None:
    scope[_PASSED] = True
