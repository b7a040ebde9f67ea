"""A clock the test moves by hand, for the scheduler (see butler.scheduler.Clock)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta


class ManualClock:
    """Time stands still until the test calls :meth:`set` or :meth:`advance`.

    Sleepers wake when the clock reaches their deadline, so a scheduler loop
    parked until 08:00 runs exactly when the test moves the clock to 08:00.
    """

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []

    def now(self) -> datetime:
        return self._now

    @property
    def wake_times(self) -> list[datetime]:
        """When each parked sleeper wants to wake, earliest first."""
        return sorted(when for when, fut in self._sleepers if not fut.done())

    async def sleep_until(self, when: datetime) -> None:
        if when <= self._now:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (when, future)
        self._sleepers.append(entry)
        try:
            await future
        finally:
            self._sleepers.remove(entry)

    def set(self, when: datetime) -> None:
        """Move the clock to ``when`` and wake every sleeper whose time has come."""
        self._now = when
        for deadline, future in self._sleepers:
            if deadline <= when and not future.done():
                future.set_result(None)

    def advance(self, delta: timedelta) -> None:
        self.set(self._now + delta)
