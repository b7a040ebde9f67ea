"""The butler's Starlette app: MCP over streamable HTTP (``/mcp``) and SSE (``/sse``),
plus ``GET /health`` and the dashboard at ``/``, all on one port."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastmcp import FastMCP
from fastmcp.server.http import RequestContextMiddleware
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from butler.dashboard import dashboard_routes
from butler.http_limits import JsonRpcBodyLimit
from butler.tools.builders import register_builder_tools
from butler.tools.context import ButlerContext
from butler.tools.contract import register_contract_tools
from butler.tools.core import register_core_tools, status_of
from butler.tools.ledger_middleware import LedgerMiddleware
from butler.tools.limits import ArgumentErrors
from butler.tools.schedules import register_schedule_tools
from butler.tools.sessions import register_session_tools


def build_mcp(butler: ButlerContext) -> FastMCP:
    """The butler's MCP server with every tool registered."""
    description = butler.config.butler.description or f"The {butler.config.name} butler."
    mcp = FastMCP(butler.config.name, instructions=description)
    mcp.add_middleware(LedgerMiddleware(butler.spawner.ledger))
    mcp.add_middleware(ArgumentErrors())
    register_core_tools(mcp, butler)
    register_session_tools(mcp, butler)
    register_contract_tools(mcp, butler)
    register_schedule_tools(mcp, butler)
    register_builder_tools(mcp, butler)
    return mcp


def build_app(butler: ButlerContext, mcp: FastMCP | None = None) -> Starlette:
    """One Starlette app serving both MCP transports; their lifespans combined."""
    mcp = mcp or build_mcp(butler)
    http_app = mcp.http_app(path="/mcp")
    sse_app = mcp.http_app(transport="sse")

    async def health(_: Request) -> JSONResponse:
        body = await status_of(butler)
        return JSONResponse(body, status_code=200 if body["database"] else 503)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with http_app.router.lifespan_context(app), sse_app.router.lifespan_context(app):
            yield

    routes = [Route("/health", health, methods=["GET"]), *http_app.routes, *sse_app.routes]
    routes += dashboard_routes(butler)
    return Starlette(
        routes=routes,
        middleware=[Middleware(RequestContextMiddleware), Middleware(JsonRpcBodyLimit)],
        lifespan=lifespan,
    )
