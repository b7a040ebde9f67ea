"""The butler's ASGI app: MCP over streamable HTTP (``/mcp``) and SSE (``/sse``),
``GET /health``, the dashboard at ``/`` and a builder's terminal (a WebSocket at
``/sessions/<id>/terminal``), all on one port.

Every request and WebSocket handshake first passes FastMCP's Host/Origin guard
(DNS rebinding, CSRF),
then the token guard (:mod:`butler.security.http`). The two FastMCP apps are
served whole, their own middleware included, rather than having their routes
copied out of them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from butler import __version__
from butler.adapters.fastmcp import ButlerMCP, answer_input_schemas
from butler.adapters.mcp import build_wire_models
from butler.context import ButlerContext
from butler.dashboard.login import login_page
from butler.dashboard.render import SECURITY_HEADERS
from butler.http_limits import JsonRpcBodyLimit
from butler.security.handshake import GuardEveryScope
from butler.security.http import RequireToken, cookie_name
from butler.security.login import Tickets, tickets_path
from butler.security.owner_token import LiveToken
from butler.tools.builders import register_builder_tools
from butler.tools.contract import register_contract_tools
from butler.tools.core import register_core_tools, status_of
from butler.tools.ledger_middleware import LedgerMiddleware
from butler.tools.limits import ArgumentErrors
from butler.tools.notify import register_notify_tools
from butler.tools.schedules import register_schedule_tools
from butler.tools.send_file import register_send_file_tools
from butler.tools.sessions import register_session_tools
from butler.tools.tenancy import TenancyMiddleware
from butler.webterm.endpoint import Terminals
from butler.webterm.panel import terminal_routes


def build_mcp(butler: ButlerContext) -> FastMCP:
    """The butler's MCP server with every tool registered."""
    description = butler.config.butler.description or f"The {butler.config.name} butler."
    mcp = ButlerMCP(butler.config.name, instructions=description)
    mcp.add_middleware(LedgerMiddleware(butler.spawner.ledger, butler.config.runtime.tools))
    mcp.add_middleware(TenancyMiddleware(butler))
    mcp.add_middleware(ArgumentErrors())
    register_core_tools(mcp, butler)
    register_session_tools(mcp, butler)
    register_contract_tools(mcp, butler)
    register_schedule_tools(mcp, butler)
    register_builder_tools(mcp, butler)
    register_notify_tools(mcp, butler)
    register_send_file_tools(mcp, butler)
    return mcp


class _ByPrefix:
    """Send each request to the app serving its path prefix, else to ``default``."""

    def __init__(self, default: ASGIApp, apps: dict[str, ASGIApp]) -> None:
        self.default = default
        self.apps = apps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            for prefix, app in self.apps.items():
                if path == prefix or path.startswith(prefix + "/"):
                    await app(scope, receive, send)
                    return
        await self.default(scope, receive, send)


class _DashboardAtFirstUse:
    """The site, the dashboard's routes imported and added by the first request for them.

    The dashboard's views are no part of serving tools, nor of ``/health``: importing
    them at start was ~1.5 % of it. The first request for anything else (a page, an
    asset, a form) pays that once; the routes go where they always were, after
    ``/health`` and ``/api/status`` and before the terminal's.
    """

    def __init__(self, site: Starlette, butler: ButlerContext, token: LiveToken) -> None:
        self.site = site
        self.butler = butler
        self.token = token
        self.pending = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.pending and scope["type"] != "lifespan" and scope["path"] not in _NO_DASHBOARD:
            from butler.dashboard.routes import dashboard_routes

            self.site.router.routes[2:2] = dashboard_routes(self.butler, self.token)
            self.pending = False
        await self.site(scope, receive, send)


#: What the site answers before (and without) its dashboard.
_NO_DASHBOARD = frozenset({"/health", "/api/status"})


def _allowed_hosts(declared: list[str], public_url: str | None) -> list[str]:
    """``allowed_hosts`` and ``public_url``'s host: runtimes on workers call that address."""
    public = urlsplit(public_url).hostname if public_url else None
    return [*declared, public] if public else list(declared)


def _token_guard(app: ASGIApp, butler: ButlerContext, token: LiveToken) -> RequireToken:
    """``app`` behind the owner's token, its session tokens and the dashboard's login."""
    config = butler.config
    return RequireToken(
        app,
        owner_token=token,
        sessions=butler.spawner.session_tokens,
        cookie=cookie_name(config.butler.port),
        login_page=login_page(config.butler.name, f"butler token --config {config.config_dir}"),
        tickets=Tickets(tickets_path(config), audience=config.name),
    )


def build_app(butler: ButlerContext, mcp: FastMCP | None = None) -> ASGIApp:
    """The whole butler behind its Host/Origin and token guards; lifespans combined."""
    mcp = mcp or build_mcp(butler)
    section = butler.config.butler
    guard: dict[str, Any] = {
        "host_origin_protection": True,
        "allowed_hosts": _allowed_hosts(section.allowed_hosts, section.public_url),
        "allowed_origins": list(section.allowed_origins),
    }
    http_app = mcp.http_app(path="/mcp", **guard)
    sse_app = mcp.http_app(transport="sse", **guard)

    async def health(_: Request) -> JSONResponse:
        # Open to anyone: says it is up, and nothing a stranger could use.
        database = await butler.db.ping()
        brief = {
            "status": "ok" if database else "degraded",
            "butler": butler.config.name,
            "version": __version__,
        }
        return JSONResponse(brief, status_code=200 if database else 503)

    async def status(_: Request) -> JSONResponse:
        body = await status_of(butler)
        return JSONResponse(body, 200 if body["database"] else 503, SECURITY_HEADERS)

    terminals = Terminals(butler)
    token = LiveToken(butler.config)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with http_app.router.lifespan_context(app), sse_app.router.lifespan_context(app):
            await warm_up(mcp)
            try:
                yield
            finally:
                await terminals.close_all()  # no tmux client outlives the daemon

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/api/status", status, methods=["GET"]),
        # The dashboard's pages come here (_DashboardAtFirstUse).
        *terminal_routes(terminals),
    ]
    site = Starlette(routes=routes, lifespan=lifespan)
    mcp_apps = {"/mcp": http_app, "/sse": sse_app, "/messages": sse_app}
    inner = JsonRpcBodyLimit(_ByPrefix(_DashboardAtFirstUse(site, butler, token), mcp_apps))
    authenticated = _token_guard(inner, butler, token)
    # The same guard as FastMCP's own, in front of the dashboard, the terminal's
    # WebSocket and the token check too.
    return GuardEveryScope(
        authenticated,
        allowed_hosts=guard["allowed_hosts"],
        allowed_origins=guard["allowed_origins"],
    )


async def warm_up(mcp: FastMCP) -> None:
    """Do before serving what FastMCP otherwise does on the first call of all.

    FastMCP imports and builds its session-state store and dereferences tool
    schemas on first use, which made the first tool call after ``/health``
    several times slower than later ones. One list and one call through the
    server's own API (middleware included) pay for it, without importing
    FastMCP's client stack, which start-up does not otherwise need. The tools
    are fixed once registered, so the input schemas the SDK checks every call's
    headers against are answered from this listing
    (:func:`~butler.adapters.fastmcp.answer_input_schemas`).
    """
    build_wire_models()
    tools = await mcp.list_tools()
    answer_input_schemas(
        mcp, {tool.name: tool.to_mcp_tool(name=tool.name).input_schema for tool in tools}
    )
    await mcp.call_tool("status", {})
