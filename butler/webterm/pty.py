"""A child process on a pseudo-terminal of its own, read and written without threads.

The child gets the pty's far end as stdin, stdout and stderr, in a session
(and process group) of its own, so closing it reaches everything it started.
Reads wait for the descriptor to become readable, so output is read only as
fast as it is passed on: a slow viewer slows its own reader and nothing piles
up in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import struct
import termios
from collections.abc import Sequence

#: Most bytes one read takes from the pty.
CHUNK = 64 * 1024
#: How long a child has to leave after SIGTERM before it gets SIGKILL.
TERM_GRACE_S = 2.0


def set_size(fd: int, cols: int, rows: int) -> None:
    """Tell the terminal on ``fd`` its size in character cells."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class PtyProcess:
    """One child on one pty; :meth:`close` leaves neither behind."""

    def __init__(self, process: asyncio.subprocess.Process, master: int) -> None:
        self.process = process
        self.master = master
        self._closed = False
        self._waiting: set[asyncio.Future[None]] = set()

    @classmethod
    async def start(
        cls, argv: Sequence[str], env: dict[str, str], cols: int, rows: int
    ) -> PtyProcess:
        """Start ``argv`` on a new pty of ``cols`` x ``rows``."""
        master, slave = os.openpty()
        try:
            set_size(slave, cols, rows)
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=env,
                start_new_session=True,
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        return cls(process, master)

    async def _ready(self, register: str) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._waiting.add(ready)
        getattr(loop, f"add_{register}")(self.master, _settle, ready)
        try:
            await ready
        finally:
            self._waiting.discard(ready)
            if not self._closed:
                getattr(loop, f"remove_{register}")(self.master)

    async def read(self) -> bytes:
        """The next output of the child; ``b""`` once it has gone (the pty hung up)."""
        while not self._closed:
            try:
                return os.read(self.master, CHUNK)
            except BlockingIOError:
                await self._ready("reader")
            except OSError:  # EIO: the far end is closed, the child has gone
                return b""
        return b""

    async def write(self, data: bytes) -> None:
        """Type ``data`` into the child's terminal."""
        view = memoryview(data)
        while view and not self._closed:
            try:
                view = view[os.write(self.master, view) :]
            except BlockingIOError:
                await self._ready("writer")

    def resize(self, cols: int, rows: int) -> None:
        """Change the terminal's size and tell the child (SIGWINCH to its group)."""
        if self._closed:
            return
        set_size(self.master, cols, rows)
        self._signal(signal.SIGWINCH)

    def _signal(self, sig: signal.Signals) -> None:
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, sig)

    async def close(self) -> None:
        """End the child (TERM, then KILL after a grace period), reap it, close the pty."""
        if self._closed:
            return
        self._closed = True
        try:
            self._signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), TERM_GRACE_S)
            except TimeoutError:
                self._signal(signal.SIGKILL)
                await self.process.wait()
        finally:
            # Whoever still waits on the pty wakes up to find it closed, and the
            # loop lets go of the descriptor before its number can be reused.
            loop = asyncio.get_running_loop()
            loop.remove_reader(self.master)
            loop.remove_writer(self.master)
            for waiter in list(self._waiting):
                _settle(waiter)
            os.close(self.master)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
