"""Whether each butler of a roster is up, for ``butler list``: probed from outside.

``/health`` says up, degraded or someone else's port; for a butler that is
up, ``/api/status`` (with its owner token) says how its chat channels are.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from butler.essentials import Essentials
from butler.security.listener import held_by_me
from butler.security.owner_token import ENV_VAR, stored_owner_token


@dataclass(frozen=True)
class ButlerStatus:
    """One line of ``butler list``."""

    name: str
    port: int
    runtime: str
    schedules: int
    status: str
    #: Each chat channel and its state ("telegram connected"), "-" for none, "?" unknown.
    channels: str = "-"


async def statuses(configs: Sequence[Essentials], timeout: float = 1.0) -> list[ButlerStatus]:
    """Each butler with whether its ``/health`` answers (probed all at once)."""
    found = await asyncio.gather(*(asyncio.to_thread(_line, c, timeout) for c in configs))
    return list(found)


def _line(config: Essentials, timeout: float) -> ButlerStatus:
    status = probe(config, timeout)
    channels = channels_of(config, timeout) if status == "up" else "-"
    return ButlerStatus(
        config.name, config.port, config.runtime or "?", config.schedules or 0, status, channels
    )


def channels_of(config: Essentials, timeout: float = 1.0) -> str:
    """The butler's chat channels as its ``/api/status`` says, asked with its owner token.

    The token goes only to a port this user holds, and is never created here.
    """
    if not held_by_me(config.port):
        return "?"
    token = stored_owner_token(config) or os.environ.get(ENV_VAR)
    if not token:
        return "?"
    request = urllib.request.Request(
        f"{config.mcp_base_url}/api/status", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = json.loads(response.read(1_000_000))
    except (OSError, ValueError, http.client.HTTPException):
        return "?"
    found = body.get("channels") if isinstance(body, dict) else None
    if not isinstance(found, list):
        return "?"
    shown = [f"{c.get('channel')} {c.get('status')}" for c in found if isinstance(c, dict)]
    return ", ".join(shown) or "-"


def probe(config: Essentials, timeout: float = 1.0) -> str:
    """``up``, ``degraded`` (database down), ``down``, or ``other`` (someone else's port)."""
    host = "127.0.0.1" if config.host in ("0.0.0.0", "::", "") else config.host
    try:
        socket.create_connection((host, config.port), timeout=timeout).close()
    except OSError:
        return "down"
    # Something accepts on the port: from here on, anything but this butler's
    # own /health answer means another program holds it.
    try:
        with urllib.request.urlopen(f"{config.mcp_base_url}/health", timeout=timeout) as response:
            body = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return "degraded" if exc.code == 503 and _is_ours(exc, config) else "other"
    except (OSError, ValueError, http.client.HTTPException):
        return "other"
    return "up" if isinstance(body, dict) and body.get("butler") == config.name else "other"


def _is_ours(error: urllib.error.HTTPError, config: Essentials) -> bool:
    try:
        body = json.loads(error.read())
    except (OSError, ValueError):
        return False
    return isinstance(body, dict) and body.get("butler") == config.name
