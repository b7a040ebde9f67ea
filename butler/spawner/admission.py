"""Admission control: a bounded number of running sessions and of waiters.

Counts are kept here, never read from asyncio's private attributes. A trigger
either gets a slot, waits in a bounded queue, or is refused at once: when the
queue is full, when the butler is shutting down, or when a session of this
butler triggers it while no slot is free (it would wait on itself forever).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator

from butler.errors import Rejected

TRIGGER_SOURCE = re.compile(r"^(tick|external|trigger|route|schedule:[a-z][a-z0-9_-]{0,39})$")


def validate_trigger_source(source: str) -> None:
    """Raise ValueError unless ``source`` is one of the known trigger sources."""
    if not TRIGGER_SOURCE.match(source):
        raise ValueError(
            f"invalid trigger source {source!r}; expected tick, external, trigger, route "
            "or schedule:<task-name>"
        )


class Admission:
    """A semaphore of ``max_running`` slots with at most ``max_waiting`` waiters."""

    def __init__(self, max_running: int, max_waiting: int) -> None:
        self.max_running = max_running
        self.max_waiting = max_waiting
        self._slots = asyncio.Semaphore(max_running)
        self.running = 0
        self.waiting = 0
        self.accepting = True

    def check(self, source: str) -> None:
        """Refuse at once what cannot be admitted; raise :class:`Rejected`."""
        if not self.accepting:
            raise Rejected("butler is shutting down and accepts no new triggers")
        no_free_slot = self.running + self.waiting >= self.max_running
        if source == "trigger" and no_free_slot:
            raise Rejected(
                "self-trigger refused: every session slot is busy, and a session waiting "
                "on itself would deadlock"
            )
        if no_free_slot and self.waiting >= self.max_waiting:
            raise Rejected(
                f"queue full: {self.running} running and {self.waiting} waiting "
                f"(max_queued_sessions={self.max_waiting})"
            )

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the body; wait for it in the bounded queue."""
        self.waiting += 1
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._slots.release()
