"""Where a session's runtime runs: in the daemon, or on a worker (docs/scaling.md).

``[butler.runtime] workers`` decides: ``"local"`` always here (no engine, no
query), ``"remote"`` always on a worker, ``"any"`` here while fewer than
``local_sessions`` run here, else on a worker, as long as one is alive (its row
in ``workers`` beat recently): the session is queued for the workers and also
waits for a local slot, and runs wherever room comes first (a local slot taken
first takes the job back from the queue). With no live worker a session waits
for a local slot instead of for a worker that may never come, and one with
writable folders (folders of this machine, which a worker cannot see) always
runs here; attachments travel with the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

from butler.config import ButlerConfig
from butler.runtimes.base import RuntimeFailure
from butler.spawner.session import Session
from butler.store.session_jobs import PROTOCOL
from butler.store.workers import WorkerRows, speaks

log = logging.getLogger(__name__)


def version() -> str:
    import butler

    return butler.__version__


#: Here, on a worker, or wherever room comes first.
Place = Literal["here", "worker", "either"]


class Placement:
    """Picks here or a worker for each session of one butler."""

    def __init__(self, config: ButlerConfig, workers: WorkerRows) -> None:
        self.mode = config.runtime.workers
        self.workers = workers
        self._here = asyncio.Semaphore(config.runtime.local_sessions)

    async def refuse_strangers(self) -> None:
        """Raise :class:`RuntimeFailure` when every live worker of this
        butler speaks another hand-over protocol: none will ever pick its session, which
        would otherwise wait out its whole bound. With no worker at all it waits (one
        may start)."""
        try:
            if await self.workers.live() > 0:
                return
            strangers = await self.workers.strangers()
        except Exception as exc:  # the database away: the wait copes with it
            log.warning("cannot read the workers' rows: %s: %s", type(exc).__name__, exc)
            return
        if strangers:
            line = (
                f"no worker that speaks this daemon's hand-over ({speaks(PROTOCOL, version())})"
                f" serves this butler; refused for that: {', '.join(strangers)}. Upgrade "
                "them to this daemon's version (`butler workers` shows each one's)"
            )
            raise RuntimeFailure(line)  # the session's failure is the daemon's one line

    def never_waits(self) -> bool:
        """Whether :meth:`place` always answers at once (only ``"any"`` may wait)."""
        return self.mode != "any"

    @contextlib.asynccontextmanager
    async def place(self, session: Session) -> AsyncIterator[Place]:
        """Where the session goes; a local slot is held inside when it is ``"here"``."""
        if self.mode != "any":
            yield "worker" if self.mode == "remote" else "here"
            return
        if not session.writable and self._here.locked():
            if await self._alive():
                yield "either"
                return
        async with self._here:
            yield "here"

    async def here_first(
        self, waiting: asyncio.Future[Any], take_back: Callable[[], Awaitable[bool]]
    ) -> bool:
        """For an ``"either"`` session, queued for the workers (``waiting`` for its result):
        True when a local slot came first and ``take_back`` withdrew the job, the slot then
        held (:meth:`release_here`); False to go on waiting for the worker."""
        slot = asyncio.ensure_future(self._here.acquire())
        try:
            await asyncio.wait({slot, waiting}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            self._drop(slot)
            raise
        if not slot.done():
            self._drop(slot)
            return False
        try:
            if not waiting.done() and await take_back():
                return True
        except BaseException:
            self._here.release()
            raise
        self._here.release()  # a worker has it already
        return False

    def release_here(self) -> None:
        self._here.release()

    def _drop(self, slot: asyncio.Future[Any]) -> None:
        """Stop waiting for a slot; give it back if it came meanwhile."""
        if slot.done() and not slot.cancelled():
            self._here.release()
        else:
            slot.cancel()

    async def _alive(self) -> bool:
        try:
            return await self.workers.live() > 0
        except Exception as exc:  # the database away: the session waits for a slot here
            log.warning("cannot read the workers' rows: %s: %s", type(exc).__name__, exc)
            return False
