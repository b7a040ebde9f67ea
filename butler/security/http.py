"""The HTTP guard in front of every route but ``/health``: a bearer token, or nothing.

The owner's token opens everything; the dashboard also takes it from a
cookie, set by the login link ``/?token=...``. WebSocket handshakes (the
builder's terminal) pass the same check: a browser sends the cookie with
them, and a refusal is the same 401, sent as the handshake's denial. A session's token opens only
the MCP transports, as that session. Anything else is one 401 line that says
what to send and nothing of what exists.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import Headers, QueryParams
from starlette.requests import cookie_parser
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from butler.security.caller import OWNER, SCOPE_KEY, Caller
from butler.security.owner_token import same_token
from butler.security.session_tokens import SessionTokens

#: Path prefixes of the MCP transports (streamable HTTP, SSE and its message endpoint).
MCP_PREFIXES = ("/mcp", "/sse", "/messages")
#: At most this much of a presented token is looked at.
MAX_TOKEN = 512
UNAUTHORIZED = (
    "unauthorized: send the header 'Authorization: Bearer <token>' "
    "(`butler token --config DIR` prints the owner token)"
)


def is_mcp_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in MCP_PREFIXES)


def cookie_name(port: int) -> str:
    """Cookies ignore ports, so each butler on one host needs its own cookie name."""
    return f"butler_token_{port}"


def _bearer(headers: Headers) -> str | None:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()[:MAX_TOKEN]


class RequireToken:
    """ASGI middleware: authenticate each request and leave its :class:`Caller` in the scope."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        owner_token: str,
        sessions: SessionTokens,
        cookie: str,
        open_paths: Iterable[str] = ("/health",),
    ) -> None:
        self.app = app
        self.owner_token = owner_token
        self.sessions = sessions
        self.cookie = cookie
        self.open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        mcp = is_mcp_path(scope["path"])
        if not mcp and scope["path"] == "/" and scope.get("method") == "GET":
            query = QueryParams(scope.get("query_string", b""))
            if "token" in query:
                await self._login(query["token"][:MAX_TOKEN])(scope, receive, send)
                return
        token = _bearer(headers)
        if token is None and not mcp:
            token = cookie_parser(headers.get("cookie", "")).get(self.cookie)
        caller = self._resolve(token, mcp)
        if caller is None:
            await self._refuse()(scope, receive, send)
            return
        scope[SCOPE_KEY] = caller
        await self.app(scope, receive, send)

    def _resolve(self, token: str | None, mcp: bool) -> Caller | None:
        if token is None:
            return None
        if same_token(token, self.owner_token):
            return OWNER
        session_id = self.sessions.resolve(token) if mcp else None
        return Caller(session_id) if session_id else None

    def _login(self, token: str) -> Response:
        """The login link: the token goes into a cookie and out of the address bar."""
        if not same_token(token, self.owner_token):
            return self._refuse()
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(self.cookie, token, httponly=True, samesite="strict", path="/")
        return response

    @staticmethod
    def _refuse() -> Response:
        return JSONResponse(
            {"error": UNAUTHORIZED},
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="butler"', "Cache-Control": "no-store"},
        )
