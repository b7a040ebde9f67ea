"""A tiny MCP server that proves a CLI really called a tool.

It offers one tool, `state_set(key, value)`, over streamable HTTP at
`/mcp`, and records every call, so a test can tell a tool call that
reached the server from one the CLI merely printed. With
`first_list_delay_s` its first tool list comes that late, as a loaded
server's may.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Self

from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware, MiddlewareContext

from tests.fakes.threaded_server import ThreadedServer


class McpProbe:
    """Streamable-HTTP MCP server on 127.0.0.1 with a recording `state_set` tool."""

    def __init__(self, name: str = "probe", first_list_delay_s: float = 0.0) -> None:
        self.name = name
        self.calls: list[tuple[str, str]] = []
        mcp: FastMCP = FastMCP(name, middleware=[_LateFirstList(first_list_delay_s)])

        @mcp.tool
        def state_set(key: str, value: str) -> str:
            """Store a value under a key."""
            self.calls.append((key, value))
            return f"stored {key}={value}"

        self._http = ThreadedServer(mcp.http_app(path="/mcp"), f"mcp-probe-{name}")

    @property
    def url(self) -> str:
        """Streamable-HTTP endpoint, e.g. "http://127.0.0.1:40123/mcp"."""
        if not self._http.running:
            raise RuntimeError("McpProbe is not started")
        return f"http://127.0.0.1:{self._http.port}/mcp"

    def start(self) -> Self:
        """Serve until `stop()`; returns self once accepting."""
        self._http.start()
        return self

    def stop(self) -> None:
        """Shut the server down. Idempotent."""
        self._http.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class _LateFirstList(Middleware):
    """Answers the first `tools/list` after a delay, the later ones at once."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: Any) -> Any:
        delay, self.delay_s = self.delay_s, 0.0
        if delay:
            await asyncio.sleep(delay)
        return await call_next(context)
