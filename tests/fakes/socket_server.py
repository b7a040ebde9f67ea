"""What the WebSocket fakes (Slack, Discord) share: served from a thread, driven from a test.

A fake runs uvicorn in a thread with its own event loop; a test, in another
thread, makes people write (:meth:`SocketFake.soon` hands the work to the
fake's loop) and waits for what the client did (:meth:`SocketFake.wait`,
woken at each :meth:`SocketFake.note`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, ClassVar, Self

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from tests.fakes.threaded_server import ThreadedServer


class SocketFake:
    """A fake chat server with WebSockets, on a port it keeps across restarts."""

    name: ClassVar[str]

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._port: int | None = None
        self._http: ThreadedServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> Self:
        self._http = ThreadedServer(self._app(), self.name, ws="websockets-sansio")
        self._port = self._http.start(self._port)
        return self

    def stop(self) -> None:
        if self._http is not None:
            self.soon(self.closing)
            self._http.stop()
            self._http = None

    def restart(self) -> None:
        """Stop and start again on the same port, keeping what the fake knows."""
        self.stop()
        self.start()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def routes(self) -> list[BaseRoute]:
        """The fake's HTTP and WebSocket routes."""
        raise NotImplementedError

    def started(self) -> None:
        """Called in the fake's loop once it serves (again)."""

    def closing(self) -> None:
        """Called in the fake's loop before it stops: close the WebSockets."""

    def _app(self) -> Starlette:
        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            self._loop = asyncio.get_running_loop()
            self.started()
            yield

        return Starlette(routes=self.routes(), lifespan=lifespan)

    def soon(self, call: Callable[..., Any], *args: Any) -> None:
        """Run ``call(*args)`` in the fake's loop (from any thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(call, *args)

    def later(self, delay: float, call: Callable[[], Any]) -> None:
        """Run ``call()`` in the fake's loop ``delay`` seconds from now (from its loop)."""
        assert self._loop is not None
        self._loop.call_later(delay, call)

    def note(self) -> None:
        """Something changed: wake whoever waits."""
        with self._changed:
            self._changed.notify_all()

    def wait(self, check: Callable[[], bool], timeout: float = 30.0) -> None:
        """Until ``check()`` holds (it is asked again at each change)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not check():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"not so within {timeout} s")
                self._changed.wait(min(left, 0.5))

    async def until(self, check: Callable[[], bool], timeout: float = 30.0) -> None:
        """:meth:`wait` from a test's event loop, which goes on running meanwhile."""
        await asyncio.to_thread(self.wait, check, timeout)
