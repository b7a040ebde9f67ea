"""The terminal on a live builder's detail page, and the files it loads.

xterm.js draws into ``<style>`` elements it creates and fills at run time
(cell sizes it measures, the theme's colours), which the dashboard's strict
``style-src 'self'`` would block. The page that holds a terminal therefore
carries a fresh nonce in its policy, and ``terminal.js`` gives it to each
``<style>`` element as it is created. ``script-src`` stays ``'self'``: every
script is a file served below.
"""

from __future__ import annotations

import html
import secrets
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute

from butler.builders.records import is_builder, is_live
from butler.webterm.endpoint import Terminals

#: ``/assets/<folder>/<name>``: xterm.js as published (``xterm``) and the page's own glue.
ASSETS = {
    ("xterm", "xterm.js"): "text/javascript",
    ("xterm", "addon-fit.js"): "text/javascript",
    ("xterm", "xterm.css"): "text/css",
    ("xterm", "LICENSE"): "text/plain",
    ("terminal", "terminal.js"): "text/javascript",
    ("terminal", "terminal.css"): "text/css",
}
ASSET_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}


@dataclass(frozen=True)
class Panel:
    """The terminal's HTML, and the nonce its page's policy must admit (none: no terminal)."""

    html: str = ""
    nonce: str | None = field(default=None, repr=False)

    def headers(self, base: dict[str, str]) -> dict[str, str]:
        """``base`` with the nonce added to ``style-src`` when there is a terminal."""
        if self.nonce is None:
            return base
        policy = base["Content-Security-Policy"].replace(
            "style-src 'self'", f"style-src 'self' 'nonce-{self.nonce}'", 1
        )
        return {**base, "Content-Security-Policy": policy}


def terminal_panel(row: dict[str, Any]) -> Panel:
    """The terminal of a running interactive builder; an empty panel for any other session."""
    meta = row.get("metadata") or {}
    if not is_builder(row) or meta.get("headless") or not is_live(row):
        return Panel()
    nonce = secrets.token_urlsafe(18)
    src = html.escape(f"/sessions/{row['id']}/terminal", quote=True)
    text = (
        f'<section id="terminal-panel" data-src="{src}" nonce="{nonce}">'
        '<h2>Terminal</h2><p class="terminal-bar"><span id="terminal-state" '
        'data-state="connecting">connecting…</span> <a id="terminal-mode" href="?mode=view">'
        "watch read-only</a></p>"
        '<div id="terminal" class="terminal-screen"></div>'
        '<link rel="stylesheet" href="/assets/xterm/xterm.css">'
        '<link rel="stylesheet" href="/assets/terminal/terminal.css">'
        # terminal.js first: it moves the panel out of the live region before that is
        # next re-rendered, and starts the terminal once the two below have run.
        '<script src="/assets/terminal/terminal.js" defer></script>'
        '<script src="/assets/xterm/xterm.js" defer></script>'
        '<script src="/assets/xterm/addon-fit.js" defer></script></section>'
    )
    return Panel(text, nonce)


def _asset_path(folder: str, name: str) -> Path:
    return Path(str(resources.files("butler") / "assets" / folder / name))


async def asset(request: Request) -> Response:
    """One of the terminal's files; nothing else is served from here."""
    key = (request.path_params["folder"], request.path_params["name"])
    if key not in ASSETS:
        return PlainTextResponse("not found", 404)
    return FileResponse(_asset_path(*key), media_type=ASSETS[key], headers=ASSET_HEADERS)


def terminal_routes(terminals: Terminals) -> list[BaseRoute]:
    """The WebSocket of each builder's terminal and the files its page loads."""
    return [
        WebSocketRoute("/sessions/{session_id}/terminal", terminals.serve),
        Route("/assets/{folder}/{name}", asset, methods=["GET"]),
    ]
