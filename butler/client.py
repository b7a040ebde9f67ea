"""Talking to a running butler daemon from the command line, over MCP.

:func:`tool_call` is what commands use: one call through :mod:`butler.mcp_http`,
which costs no import of FastMCP's client. :func:`daemon_client` is FastMCP's
client, for the adapter contract's longer conversations.
"""

from __future__ import annotations

import contextlib
import ipaddress
import urllib.parse
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from butler.errors import ButlerError, UserError
from butler.mcp_http import McpError, Progress, ToolFailed, call_tool
from butler.security.listener import held_by_me
from butler.security.owner_token import owner_token

if TYPE_CHECKING:
    from fastmcp import Client

    from butler.address import DaemonAddress
    from butler.config import ButlerConfig


class DaemonNotRunning(UserError):
    """The butler's daemon does not answer on its port."""


@contextlib.asynccontextmanager
async def daemon_client(config: ButlerConfig, timeout: float = 600) -> AsyncIterator[Client]:
    """An MCP client on the butler's daemon, or a one-line error saying how to start it.

    It presents the owner token, read the same way the daemon reads it.
    """
    from fastmcp import Client

    url = f"{config.mcp_base_url}/mcp"
    _refuse_a_stranger(config, url)
    token = owner_token(config.name)
    client = Client(url, timeout=timeout, auth=token)
    try:
        await client.__aenter__()
    except Exception:
        if await _refuses(config, token):
            raise UserError(
                f"butler {config.name!r} at {url} refused the owner token; expected the one "
                f"`butler token --config {config.config_dir}` prints (BUTLER_TOKEN overrides it)"
            ) from None
        raise DaemonNotRunning(
            f"butler {config.name!r} is not running at {url}; "
            f"start it with: butler run --config {config.config_dir}"
        ) from None
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            await client.__aexit__(None, None, None)


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _refuse_a_stranger(config: ButlerConfig | DaemonAddress, url: str) -> None:
    """No owner token for a local port that another user's process holds.

    A butler that is down leaves its port free for any local user to listen
    on; whatever answers there would otherwise be sent the owner token.
    """
    parts = urllib.parse.urlsplit(url)
    if not _loopback(parts.hostname):
        return  # a remote or proxied address: who listens there cannot be seen from here
    port = parts.port or 80
    mine = held_by_me(port)
    if mine is None:
        raise DaemonNotRunning(
            f"butler {config.name!r} is not running at {url}; "
            f"start it with: butler run --config {config.config_dir}"
        )
    if not mine:
        raise UserError(
            f"port {port} is held by another user's process, not butler {config.name!r}; "
            "its owner token was not sent"
        )


async def _refuses(config: ButlerConfig, token: str) -> bool:
    """Whether the daemon answers, and answers 401 to this token (rather than being down)."""
    import httpx2

    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx2.AsyncClient(timeout=5) as http:
            answer = await http.get(f"{config.mcp_base_url}/api/status", headers=headers)
    except httpx2.HTTPError:
        return False
    return answer.status_code == 401


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
    """Call a tool and return its structured result; a tool error becomes a ButlerError."""
    from fastmcp.exceptions import ToolError

    try:
        result = await client.call_tool(tool, arguments)
    except ToolError as exc:
        raise ButlerError(str(exc)) from None
    data = result.structured_content
    if isinstance(data, dict) and set(data) == {"result"}:
        return data["result"]
    return data


def tool_call(
    config: ButlerConfig | DaemonAddress,
    tool: str,
    arguments: dict[str, Any],
    *,
    timeout: float,
    progress: Progress | None = None,
) -> Any:
    """Call one tool of the butler's running daemon with the owner token; its result.

    The tool's own refusal is a :class:`UserError` in its words; a daemon that
    is down, or that refuses the token, is one line saying what to do.
    """
    url = f"{config.mcp_base_url}/mcp"
    _refuse_a_stranger(config, url)
    token = owner_token(config.name)
    try:
        return call_tool(url, tool, arguments, token=token, timeout=timeout, progress=progress)
    except ToolFailed as exc:
        raise UserError(str(exc)) from None
    except McpError as exc:
        if exc.status == 401:
            raise UserError(
                f"butler {config.name!r} at {url} refused the owner token; expected the one "
                f"`butler token --config {config.config_dir}` prints (BUTLER_TOKEN overrides it)"
            ) from None
        if exc.status is None and str(exc).startswith("cannot reach"):
            raise DaemonNotRunning(
                f"butler {config.name!r} is not running at {url}; "
                f"start it with: butler run --config {config.config_dir}"
            ) from None
        raise ButlerError(f"butler {config.name!r} at {url}: {exc}") from None
