"""Run an ASGI app with uvicorn in a background thread on a free loopback port.

A thread, not a subprocess, so the test can read what the app recorded
directly; its own event loop, so synchronous tests can use it as well as
asynchronous ones.
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from starlette.types import ASGIApp

STARTUP_TIMEOUT_S = 10.0
SHUTDOWN_TIMEOUT_S = 10.0


class ThreadedServer:
    """uvicorn serving `app` on 127.0.0.1 from a daemon thread."""

    def __init__(self, app: ASGIApp, name: str, host: str = "127.0.0.1", ws: str = "none") -> None:
        self._app = app
        #: uvicorn's WebSocket implementation: "none" unless the app serves WebSockets.
        self.ws = ws
        #: The address it binds: loopback, or a test's link to another network namespace.
        self.host = host
        self._name = name
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    @property
    def running(self) -> bool:
        """True between a successful `start()` and `stop()`."""
        return self._thread is not None

    def start(self, port: int | None = None) -> int:
        """Bind ``port`` (a free one if None), serve, and return it once connections are accepted.

        A given port lets a test restart a server where its clients expect it.
        """
        if self._thread is not None:
            raise RuntimeError(f"{self._name} is already started")
        # Binding here rather than letting uvicorn pick port 0 tells us the
        # port without racing its start-up.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, port or 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            log_config=None,  # leave the test process's logging alone
            log_level="warning",
            access_log=False,
            lifespan="on",
            ws=self.ws,
            timeout_graceful_shutdown=2,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name=f"{self._name}-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive():
                self._forget()
                raise RuntimeError(f"{self._name} died during start-up")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self._name} did not start within {STARTUP_TIMEOUT_S} s")
            self._thread.join(0.01)
        return self.port

    def stop(self) -> None:
        """Shut uvicorn down and join its thread. Idempotent."""
        if self._thread is None or self._server is None:
            return
        self._server.should_exit = True
        self._thread.join(SHUTDOWN_TIMEOUT_S)
        if self._thread.is_alive():
            # Graceful shutdown stuck on an open connection: drop them all.
            self._server.force_exit = True
            self._thread.join(SHUTDOWN_TIMEOUT_S)
        self._forget()

    def _forget(self) -> None:
        self._thread = None
        self._server = None
