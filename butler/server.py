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
import inspect
import sys
from collections.abc import AsyncIterator
from typing import Any, get_args
from urllib.parse import urlsplit

from fastmcp import FastMCP
from fastmcp.server.dependencies import transform_context_annotations
from fastmcp.tools.function_tool import FunctionTool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from butler import __version__
from butler.context import ButlerContext
from butler.dashboard.login import login_page
from butler.dashboard.render import SECURITY_HEADERS
from butler.http_limits import JsonRpcBodyLimit
from butler.security.handshake import GuardEveryScope
from butler.security.http import RequireToken, cookie_name
from butler.security.owner_token import LiveToken
from butler.tools.builders import register_builder_tools
from butler.tools.contract import register_contract_tools
from butler.tools.core import register_core_tools, status_of
from butler.tools.ledger_middleware import LedgerMiddleware
from butler.tools.limits import ArgumentErrors
from butler.tools.notify import register_notify_tools
from butler.tools.schedules import register_schedule_tools
from butler.tools.sessions import register_session_tools
from butler.tools.tenancy import TenancyMiddleware
from butler.webterm.endpoint import Terminals
from butler.webterm.panel import terminal_routes


class _ButlerMCP(FastMCP):
    """FastMCP whose tools are described by their docstrings as written, and parsed once
    per process however many butlers register them.

    FastMCP hands each tool's docstring to griffe to split out Google, NumPy or Sphinx
    sections (``Args:``, ``Returns:``); importing griffe was ~2 % of a start.
    Butler's tool docstrings have no such sections (their parameters are described by
    their annotated types), so griffe would return them whole: they are given as the
    description, and the parser is never asked.

    Each butler's tools are closures over that butler, made by the same code:
    :func:`_parsed` builds a tool's schemas from the first and hands the rest a copy
    holding their own function. Parsing was ~90 % of building a butler's server
    (~90 ms of CPU each), so a roster of 100 butlers spent most of its start on it.
    """

    def tool(self, name_or_fn: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        if _shareable(name_or_fn) and not kwargs:
            parsed = _parsed(name_or_fn)
            if "__signature__" in vars(parsed.fn):
                # FastMCP gave the parsed function a signature of its own (a Context
                # parameter made a dependency it injects): this copy needs the same.
                transform_context_annotations(name_or_fn)
            self.add_tool(parsed.model_copy(update={"fn": name_or_fn}))
            return name_or_fn
        if inspect.isroutine(name_or_fn) and name_or_fn.__doc__ and "description" not in kwargs:
            kwargs["description"] = inspect.getdoc(name_or_fn)
            name_or_fn.__doc__ = None
        return super().tool(name_or_fn, **kwargs)


#: Tools parsed by this process, by what their schemas are made of (see :func:`_shape`).
_PARSED: dict[tuple[Any, ...], FunctionTool] = {}


def _parsed(fn: Any) -> FunctionTool:
    """The tool FastMCP makes of ``fn``, parsed only for the first function of its shape."""
    shape = _shape(fn)
    tool = _PARSED.get(shape)
    if tool is None:
        description = inspect.getdoc(fn)
        fn.__doc__ = None  # given as the description: the docstring parser is never asked
        tool = _PARSED[shape] = FunctionTool.from_function(fn, description=description)
    return tool


def _shape(fn: Any) -> tuple[Any, ...]:
    """What a tool's name, description and schemas are made of: its code and name, and
    the values its definition evaluated (defaults, annotations), which a closure may make
    differ. Compared by ``repr``, which shows an object without a value of its own by its
    address: unique while the first tool of that shape keeps the object alive."""
    made = repr((fn.__defaults__, fn.__kwdefaults__, fn.__annotations__))
    return (fn.__code__, fn.__qualname__, made)


def _shareable(fn: Any) -> bool:
    """Whether ``fn``'s parsing may be shared: a plain function (not a decorator's
    wrapper, nothing set on it) whose annotations name only classes found again by their
    module and name. A class made inside the registering function (an Enum of a butler's
    choices, a model) has one ``repr`` in every butler, whatever each one holds."""
    if not inspect.isfunction(fn) or vars(fn):
        return False
    return all(_named(hint) for hint in fn.__annotations__.values())


def _named(hint: Any) -> bool:
    if hint is type(None):
        return True
    if isinstance(hint, type):
        found: Any = sys.modules.get(hint.__module__)
        for part in hint.__qualname__.split("."):
            found = getattr(found, part, None)
        return found is hint
    return all(_named(arg) for arg in get_args(hint))


def build_mcp(butler: ButlerContext) -> FastMCP:
    """The butler's MCP server with every tool registered."""
    description = butler.config.butler.description or f"The {butler.config.name} butler."
    mcp = _ButlerMCP(butler.config.name, instructions=description)
    mcp.add_middleware(LedgerMiddleware(butler.spawner.ledger, butler.config.runtime.tools))
    mcp.add_middleware(TenancyMiddleware(butler))
    mcp.add_middleware(ArgumentErrors())
    register_core_tools(mcp, butler)
    register_session_tools(mcp, butler)
    register_contract_tools(mcp, butler)
    register_schedule_tools(mcp, butler)
    register_builder_tools(mcp, butler)
    register_notify_tools(mcp, butler)
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
    authenticated = RequireToken(
        JsonRpcBodyLimit(_ByPrefix(_DashboardAtFirstUse(site, butler, token), mcp_apps)),
        owner_token=token,
        sessions=butler.spawner.session_tokens,
        cookie=cookie_name(section.port),
        login_page=login_page(section.name, f"butler token --config {butler.config.config_dir}"),
    )
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
    FastMCP's client stack, which start-up does not otherwise need.

    The MCP SDK checks a call's ``Mcp-Param-*`` headers against the tool's
    input schema; with no lookup it runs a whole ``tools/list`` through the
    server (middleware and all) for every ``tools/call``, a sixth of the
    daemon's CPU per trigger. The tools are fixed once registered, so the
    lookup answers from what this listing returned.
    """
    build_wire_models()
    tools = await mcp.list_tools()
    schemas = {tool.name: tool.to_mcp_tool(name=tool.name).input_schema for tool in tools}
    mcp._mcp_server.get_tool_input_schema = schemas.get
    await mcp.call_tool("status", {})


#: What an agent's tool session sends, in either protocol era: a handshake (2025) or a
#: discovery (2026), pings, listings and calls of tools, a cancellation.
SESSION_METHODS = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "server/discover",
        "ping",
        "tools/list",
        "tools/call",
        "notifications/cancelled",
    }
)


def build_wire_models() -> None:
    """Build the wire models a tool session is checked against, in every protocol version.

    :func:`butler.roster.defer_wire_models` left them unbuilt at import; built here,
    before ``/health`` answers, the first call pays none of it. The rest of the
    protocol (prompts, resources, sampling, tasks) is built if a client ever uses it.
    """
    from mcp_types import methods

    surfaces = (methods.CLIENT_REQUESTS, methods.CLIENT_NOTIFICATIONS, methods.SERVER_RESULTS)
    for surface in surfaces:
        for (method, _version), target in surface.items():
            if method in SESSION_METHODS:
                for model in get_args(target) or (target,):
                    model.model_rebuild()
