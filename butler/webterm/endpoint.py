"""The WebSocket at ``/sessions/<id>/terminal``: a browser's terminal on a builder's tmux session.

Each connection runs its own tmux client (``attach-session``) on a pty of its
own: the client sends tmux's output down the socket as binary frames and
types what arrives as ``{"type": "input", "data": ...}``; ``{"type":
"resize", "cols": C, "rows": R}`` resizes its pty. ``?mode=view`` attaches
read-only and with ``ignore-size`` (a viewer neither types nor changes the
window's size), and its input is dropped here before tmux could see it.
The caller was authenticated and its Origin checked before it got here.
Every connection is counted against its builder, and its tmux client is
ended when the socket closes or the daemon stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from butler.builders.records import is_builder, is_live
from butler.builders.tmux import Tmux, tmux_env
from butler.context import ButlerContext
from butler.webterm.pty import PtyProcess

log = logging.getLogger(__name__)

#: Largest frame a browser may send: keystrokes or a paste (uvicorn enforces it too).
MAX_MESSAGE = 64 * 1024
#: Most terminals open on one builder at once, viewers included.
MAX_VIEWERS = 8
MODES = ("control", "view")
#: Bounds of a terminal's size in cells, and the size before the browser says.
MIN_COLS, MAX_COLS, MIN_ROWS, MAX_ROWS = 10, 500, 4, 200
DEFAULT_SIZE = (80, 24)
#: The terminal the tmux client draws for: what xterm.js understands.
TERM = "xterm-256color"


class TerminalRefused(Exception):
    """A terminal that cannot be opened: an HTTP status and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Terminals:
    """The open terminals of one butler: counted per builder, all closed at shutdown."""

    butler: ButlerContext
    counts: Counter[str] = field(default_factory=Counter)
    children: set[PtyProcess] = field(default_factory=set)

    async def target(self, session_id: str, mode: str) -> list[str]:
        """The tmux client's argv for ``mode`` on session ``session_id``.

        :class:`TerminalRefused` when it cannot be opened."""
        if mode not in MODES:
            raise TerminalRefused(400, f"mode: {mode[:40]!r} is not one of {', '.join(MODES)}")
        row = await self.butler.sessions.get(session_id)
        if row is None:
            raise TerminalRefused(404, f"session: no session {session_id[:64]!r}")
        if not is_builder(row) or (row.get("metadata") or {}).get("headless"):
            raise TerminalRefused(
                409, f"session {row['id']} is not an interactive builder: no terminal"
            )
        meta = row["metadata"]
        if not is_live(row) or not meta.get("tmux_session"):
            raise TerminalRefused(409, f"builder {meta['builder_id']} is not running: no terminal")
        flags = ["-f", "read-only,ignore-size"] if mode == "view" else []
        tmux = Tmux(meta.get("tmux_socket") or None)
        return tmux.argv("attach-session", *flags, "-t", f"={meta['tmux_session']}")

    @contextlib.contextmanager
    def seat(self, session_id: str) -> Any:
        """Count one more terminal on the builder, or refuse past :data:`MAX_VIEWERS`."""
        if self.counts[session_id] >= MAX_VIEWERS:
            raise TerminalRefused(
                429, f"session {session_id}: already {MAX_VIEWERS} terminals open (the most)"
            )
        self.counts[session_id] += 1
        try:
            yield
        finally:
            self.counts[session_id] -= 1
            if not self.counts[session_id]:
                del self.counts[session_id]

    async def close_all(self) -> None:
        """End every tmux client still running (the daemon is stopping)."""
        await asyncio.gather(*(child.close() for child in list(self.children)))

    async def serve(self, websocket: WebSocket) -> None:
        """One browser terminal, from the handshake to its tmux client's end."""
        session_id = websocket.path_params["session_id"]
        query = websocket.query_params
        try:
            argv = await self.target(session_id, query.get("mode", "control"))
            cols, rows = size(query.get("cols"), query.get("rows"))
            with self.seat(session_id):
                await self._run(websocket, argv, cols, rows, query.get("mode") == "view")
        except TerminalRefused as refused:
            await deny(websocket, refused)

    async def _run(
        self, websocket: WebSocket, argv: list[str], cols: int, rows: int, view: bool
    ) -> None:
        child = await PtyProcess.start(argv, {**tmux_env(), "TERM": TERM}, cols, rows)
        self.children.add(child)
        about = {"session_id": websocket.path_params["session_id"], "read_only": view}
        log.info("terminal opened", extra=about)
        try:
            await websocket.accept()
            await pump(websocket, child, view)
        finally:
            self.children.discard(child)
            await child.close()
            log.info("terminal closed", extra=about)
        with contextlib.suppress(RuntimeError, WebSocketDisconnect, OSError):
            await websocket.close(1000, "the terminal ended")  # unless already closed


async def deny(websocket: WebSocket, refused: TerminalRefused) -> None:
    """Refuse the handshake with an HTTP status and a JSON line (a plain 403 without the
    server's denial-response extension)."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        response = JSONResponse({"error": str(refused)}, refused.status)
        await websocket.send_denial_response(response)
    else:
        await websocket.close(code=1008, reason=str(refused)[:120])


def size(cols: Any, rows: Any) -> tuple[int, int]:
    """A terminal size from the browser, each side clamped to what a screen can hold."""
    try:
        c, r = int(cols), int(rows)
    except (TypeError, ValueError):
        return DEFAULT_SIZE
    return min(max(c, MIN_COLS), MAX_COLS), min(max(r, MIN_ROWS), MAX_ROWS)


async def pump(websocket: WebSocket, child: PtyProcess, view: bool) -> None:
    """Pass output down and input up until either side ends."""
    tasks = [
        asyncio.ensure_future(_output(websocket, child)),
        asyncio.ensure_future(_input(websocket, child, view)),
    ]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _output(websocket: WebSocket, child: PtyProcess) -> None:
    while data := await child.read():
        await websocket.send_bytes(data)


async def _input(websocket: WebSocket, child: PtyProcess, view: bool) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        if text is None:  # a binary frame: the protocol has none from the browser
            await websocket.close(1003, "message: send text frames of JSON")
            return
        if len(text) > MAX_MESSAGE:
            await websocket.close(1009, f"message: over {MAX_MESSAGE} characters")
            return
        await _apply(child, parse(text), view)


def parse(text: str) -> dict[str, Any]:
    """One message from the browser; anything malformed reads as nothing to do."""
    try:
        message = json.loads(text)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


async def _apply(child: PtyProcess, message: dict[str, Any], view: bool) -> None:
    kind = message.get("type")
    if kind == "input" and not view and isinstance(message.get("data"), str):
        await child.write(message["data"].encode("utf-8", errors="replace"))
    elif kind == "resize":
        child.resize(*size(message.get("cols"), message.get("rows")))
