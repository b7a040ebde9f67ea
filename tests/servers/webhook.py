"""A plain HTTP server on loopback that records what is POSTed to it (Apprise's json://).

``status`` makes it answer with an error, for a channel that is down.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class Webhook:
    """Records every POST body; answers ``status`` (200 unless a test says otherwise)."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.status = 200
        self._arrived = threading.Condition()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size)
                status = hook.status
                with hook._arrived:
                    hook.paths.append(self.path)
                    if status < 300:
                        hook.posts.append(json.loads(body or b"{}"))
                    hook._arrived.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]

    def url(self, path: str = "/hook") -> str:
        return f"json://127.0.0.1:{self.port}{path}"

    def wait(self, count: int = 1, timeout: float = 30.0, requests: bool = False) -> list[Any]:
        """The first ``count`` bodies received (or request paths, answered or refused)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.paths if requests else self.posts) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"fewer than {count} requests within {timeout} s")
                self._arrived.wait(left)
            return list(self.paths if requests else self.posts)

    async def until(self, count: int = 1, timeout: float = 30.0) -> list[Any]:
        """:meth:`wait` from a test's event loop, which goes on running meanwhile."""
        return await asyncio.to_thread(self.wait, count, timeout)

    def __enter__(self) -> Webhook:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    with Webhook() as hook:
        yield hook
