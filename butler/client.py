"""Talking to a running butler daemon from the command line, over MCP.

:func:`tool_call` is what commands use: one call through :mod:`butler.mcp_http`,
which costs no import of FastMCP's client; :func:`daemon_tools` is one session
for several calls in turn (the adapter contract's polling).
"""

from __future__ import annotations

import contextlib
import ipaddress
import urllib.parse
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from butler.errors import ButlerError, UserError
from butler.mcp_http import McpError, Progress, ToolFailed, ToolSession
from butler.security.listener import held_by_me
from butler.security.owner_token import owner_token

if TYPE_CHECKING:
    from butler.config import ButlerConfig
    from butler.essentials import Essentials


class DaemonNotRunning(UserError):
    """The butler's daemon does not answer on its port."""


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _refuse_a_stranger(config: ButlerConfig | Essentials, url: str) -> None:
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


def tool_call(
    config: ButlerConfig | Essentials,
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
    with daemon_tools(config, timeout=timeout) as tools:
        return tools.call(tool, arguments, progress)


@contextlib.contextmanager
def daemon_tools(
    config: ButlerConfig | Essentials,
    *,
    timeout: float,
    tool_error: type[ButlerError] = UserError,
) -> Iterator[ToolSession]:
    """One MCP session on the butler's running daemon, for several tool calls in turn.

    Errors as :func:`tool_call` says, for the session and every call in it; a
    tool's own refusal is raised as ``tool_error`` (the adapter contract exits 1).
    """
    url = f"{config.mcp_base_url}/mcp"
    _refuse_a_stranger(config, url)
    token = owner_token(config)
    try:
        with ToolSession(url, token=token, timeout=timeout) as tools:
            yield tools
    except ToolFailed as exc:
        raise tool_error(str(exc)) from None
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
