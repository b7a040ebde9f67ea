"""Admission control: a bounded number of running sessions and of waiters.

Counts are kept here, never read from asyncio's private attributes. A trigger
either gets a slot, waits in a bounded queue, or is refused at once: when the
queue is full or when the butler is shutting down. A session of this butler
asking for a session queues like any caller; the spawner sees to it that it
does not wait on its own slot (:meth:`Spawner.trigger`).

The place in the queue is reserved synchronously, before the caller awaits
anything (the row insert, a parent lookup): otherwise simultaneous triggers
all pass the check before any of them is counted.
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

    @property
    def free(self) -> bool:
        """A request admitted now would get a slot without waiting for one to be released."""
        return self.running + self.waiting < self.max_running

    def check(self) -> None:
        """Refuse at once what cannot be admitted; raise :class:`Rejected`."""
        if not self.accepting:
            raise Rejected("butler is shutting down and accepts no new triggers")
        # reserved places count as waiting until they get a slot
        if self.running + self.waiting >= self.max_running + self.max_waiting:
            raise Rejected(
                f"queue full: {self.running + self.waiting} sessions running or queued "
                f"(max_concurrent_sessions={self.max_running}, "
                f"max_queued_sessions={self.max_waiting})"
            )

    def reserve(self) -> Reservation:
        """Check and count a place in the queue at once; raise :class:`Rejected`."""
        self.check()
        self.waiting += 1
        return Reservation(self)

    async def take_if_free(self, reservation: Reservation) -> bool:
        """Take a slot for ``reservation`` if one is free with no one queued ahead; whether
        it did. A taken slot is then held by :meth:`slot` with ``taken``, or handed back
        with :meth:`give_back`."""
        if self._slots.locked():
            return False
        await self._slots.acquire()  # not locked: returns at once, without yielding
        reservation.release()
        self.running += 1
        return True

    def give_back(self) -> None:
        """Hand back a slot :meth:`take_if_free` took, which :meth:`slot` never held."""
        self.running -= 1
        self._slots.release()

    @contextlib.asynccontextmanager
    async def slot(
        self, reservation: Reservation | None = None, *, taken: bool = False
    ) -> AsyncIterator[None]:
        """Hold one slot for the body; wait for it in the bounded queue (unless ``taken``
        already, by :meth:`take_if_free`)."""
        if not taken:
            reservation = reservation or Reservation.unchecked(self)
            try:
                await self._slots.acquire()
            finally:
                reservation.release()
            self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self._slots.release()


class Reservation:
    """A counted place in the queue, given up once: on getting a slot, or on abandon."""

    def __init__(self, admission: Admission) -> None:
        self._admission: Admission | None = admission

    @classmethod
    def unchecked(cls, admission: Admission) -> Reservation:
        """A place counted without the queue check (the caller checked already)."""
        admission.waiting += 1
        return cls(admission)

    def release(self) -> None:
        """Stop counting this place; harmless when already released."""
        if self._admission is not None:
            self._admission.waiting -= 1
            self._admission = None
