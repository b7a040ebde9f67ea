"""The HTTP guard in front of every route but :data:`OPEN_PATHS`: a bearer token, or nothing.

The owner's token opens everything. A browser logs in once (the login link
``?token=...`` on any page, the login page's form, or a roster's one-time
``?ticket=...``) and from then on presents a signed cookie
(:mod:`butler.security.login`), never the token itself. A page asked for
without one answers the login page, which returns to it; an ``/api`` path,
an MCP transport or a script keeps the one-line JSON 401. WebSocket handshakes
(the builder's terminal) pass the same check: a browser sends the cookie with
them, and a refusal is the same 401, sent as the handshake's denial. A
session's token opens only the MCP transports, as that session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Protocol
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers, QueryParams
from starlette.requests import Request, cookie_parser
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from butler.security.caller import OWNER, SCOPE_KEY, Caller
from butler.security.login import (
    COOKIE_LIFETIME_S,
    Tickets,
    cookie_valid,
    issue_cookie,
    safe_next,
)
from butler.security.owner_token import same_token
from butler.security.session_tokens import SessionTokens

#: Path prefixes of the MCP transports (streamable HTTP, SSE and its message endpoint).
MCP_PREFIXES = ("/mcp", "/sse", "/messages")
#: What answers without a login: the health check, and the page's own stylesheet and
#: script, which the login page needs to look like every other page. Both are the same
#: for every butler and hold nothing of it.
OPEN_PATHS = ("/health", "/assets/dashboard.css", "/assets/dashboard.js")
#: At most this much of a presented token is looked at.
MAX_TOKEN = 512
#: The login page's address; its form posts back to it.
LOGIN_PATH = "/login"
NO_STORE = {"Cache-Control": "no-store"}
#: The largest login form read (a token and a return path).
MAX_LOGIN_FORM = 4096
UNAUTHORIZED = (
    "unauthorized: send the header 'Authorization: Bearer <token>' "
    "(`butler token --config DIR` prints the owner token)"
)


def is_mcp_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in MCP_PREFIXES)


def cookie_name(port: int) -> str:
    """Cookies ignore ports, so each butler on one host needs its own cookie name."""
    return f"butler_token_{port}"


class LoginPage(Protocol):
    """Renders the login page: where to return after, and why the last try failed."""

    def __call__(self, next_path: str, error: str, status: int) -> Response: ...


def _bearer(headers: Headers) -> str | None:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()[:MAX_TOKEN]


def wants_page(scope: Scope) -> bool:
    """Whether a refusal here should be the login page: a browser asking for a page."""
    if scope["type"] != "http" or scope.get("method") not in ("GET", "HEAD"):
        return False
    path = scope["path"]
    if is_mcp_path(path) or path == "/api" or path.startswith("/api/"):
        return False
    return "text/html" in Headers(scope=scope).get("accept", "")


def _without(scope: Scope, *names: str) -> str:
    """The path and query of this request with the query parameters ``names`` left out."""
    query = [(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)]
    kept = urlencode([(k, v) for k, v in query if k not in names])
    return safe_next(scope["path"] + (f"?{kept}" if kept else ""))


def _ask_again() -> Response:
    """A page that loads its own address again, now from this site (a meta refresh: no script)."""
    return HTMLResponse(
        '<!doctype html><meta http-equiv="refresh" content="0"><title>butler</title>',
        headers={**NO_STORE, "Referrer-Policy": "same-origin"},
    )


class RequireToken:
    """ASGI middleware: authenticate each request and leave its :class:`Caller` in the scope."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        owner_token: Callable[[], str],
        sessions: SessionTokens,
        cookie: str,
        open_paths: Iterable[str] = OPEN_PATHS,
        login_page: LoginPage | None = None,
        tickets: Tickets | None = None,
    ) -> None:
        """``owner_token`` is called per request: a rotated token takes effect at once.
        ``tickets`` remembers the roster's tickets redeemed (in memory only if not given)."""
        self.app = app
        self.owner_token = owner_token
        self.sessions = sessions
        self.cookie = cookie
        self.open_paths = frozenset(open_paths)
        self.login_page = login_page
        self.tickets = tickets or Tickets()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        mcp = is_mcp_path(scope["path"])
        if scope["type"] == "http" and not mcp:
            login = await self._login(scope, receive)
            if login is not None:
                await login(scope, receive, send)
                return
        caller = self._resolve(headers, mcp)
        if caller is None and mcp and (token := _bearer(headers)) is not None:
            claimed = await self.sessions.resolve_claimed(token)  # a worker's runtime
            caller = Caller(claimed) if claimed else None
        if caller is None:
            await self._refuse(scope)(scope, receive, send)
            return
        scope[SCOPE_KEY] = caller
        await self.app(scope, receive, send)

    def _resolve(self, headers: Headers, mcp: bool) -> Caller | None:
        owner = self.owner_token()
        token = _bearer(headers)
        if token is None:
            if mcp:
                return None
            presented = cookie_parser(headers.get("cookie", "")).get(self.cookie)
            return OWNER if cookie_valid(presented, owner) else None
        if same_token(token, owner):
            return OWNER
        session_id = self.sessions.resolve(token) if mcp else None
        return Caller(session_id) if session_id else None

    async def _login(self, scope: Scope, receive: Receive) -> Response | None:
        """The answer to a login attempt, or None when this request is not one."""
        method = scope.get("method")
        if scope["path"] == LOGIN_PATH and method == "POST":
            return await self._login_form(Request(scope, receive))
        if method != "GET":
            return None
        query = QueryParams(scope.get("query_string", b""))
        owner = self.owner_token()
        if "token" in query:
            good = same_token(query["token"][:MAX_TOKEN], owner)
        elif "ticket" in query:
            # Its use is written to the data folder before it counts: off the event loop.
            good = await asyncio.to_thread(self.tickets.redeem, query["ticket"][:MAX_TOKEN], owner)
        elif scope["path"] == LOGIN_PATH:
            next_path = safe_next(query.get("next"))
            if self._resolve(Headers(scope=scope), mcp=False) is not None:
                return RedirectResponse(next_path, 303, headers=NO_STORE)
            return self._page(next_path, "", 200) or self._refuse(scope)
        else:
            return None
        # Out of the address bar (and its history) whether it worked or not.
        back = _without(scope, "token", "ticket")
        if not good:
            what = "token" if "token" in query else "login link"
            line = f"that {what} is not (or no longer) this butler's: paste the current token"
            if not wants_page(scope):
                return self._refuse(scope)
            return self._page(back, line, 401) or self._refuse(scope)
        return self._logged_in(scope, back)

    async def _login_form(self, request: Request) -> Response:
        size = request.headers.get("content-length", "")
        if not size.isdigit() or int(size) > MAX_LOGIN_FORM:
            return self._page("/", f"expected a login form of at most {MAX_LOGIN_FORM} bytes", 400)
        fields = dict(parse_qsl((await request.body())[:MAX_LOGIN_FORM].decode("utf-8", "replace")))
        next_path = safe_next(fields.get("next"))
        if not same_token(fields.get("token", "").strip()[:MAX_TOKEN], self.owner_token()):
            line = "that is not this butler's token: paste the one the command below prints"
            return self._page(next_path, line, 401) or self._refuse(request.scope)
        return self._logged_in(request.scope, next_path)

    def _logged_in(self, scope: Scope, next_path: str) -> Response:
        response = RedirectResponse(next_path, status_code=303, headers=NO_STORE)
        response.set_cookie(
            self.cookie,
            issue_cookie(self.owner_token()),
            max_age=COOKIE_LIFETIME_S,
            path="/",
            secure=scope.get("scheme") == "https",
            httponly=True,
            samesite="strict",
        )
        return response

    def _page(self, next_path: str, error: str, status: int) -> Response | None:
        if self.login_page is None:
            return None
        return self.login_page(next_path, error, status)

    def _refuse(self, scope: Scope) -> Response:
        if self.login_page is not None and wants_page(scope):
            if Headers(scope=scope).get("sec-fetch-site") == "cross-site":
                # A link from elsewhere (a notification, a chat): the browser held back
                # the SameSite=Strict cookie. Asked again from this page it sends it.
                return _ask_again()
            return self.login_page(_without(scope, "token", "ticket"), "", 401)
        return JSONResponse(
            {"error": UNAUTHORIZED},
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="butler"', **NO_STORE},
        )
