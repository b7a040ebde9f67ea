"""Talking to a running butler daemon from the command line, over MCP."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
from fastmcp import Client
from fastmcp.exceptions import ToolError

from butler.config import ButlerConfig
from butler.errors import ButlerError, UserError


class DaemonNotRunning(UserError):
    """The butler's daemon does not answer on its port."""


@contextlib.asynccontextmanager
async def daemon_client(config: ButlerConfig, timeout: float = 600) -> AsyncIterator[Client]:
    """An MCP client on the butler's daemon, or a one-line error saying how to start it."""
    url = f"{config.mcp_base_url}/mcp"
    client = Client(url, timeout=timeout)
    try:
        await client.__aenter__()
    except (OSError, httpx2.HTTPError, RuntimeError):
        raise DaemonNotRunning(
            f"butler {config.name!r} is not running at {url}; "
            f"start it with: butler run --config {config.config_dir}"
        ) from None
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            await client.__aexit__(None, None, None)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    """Call a tool and return its structured result; a tool error becomes a ButlerError."""
    try:
        result = await client.call_tool(tool, arguments)
    except ToolError as exc:
        raise ButlerError(str(exc)) from None
    data = result.structured_content
    if isinstance(data, dict) and set(data) == {"result"}:
        return data["result"]
    return data
