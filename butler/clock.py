"""Where time-driven parts (the scheduler, the notifier) read the time and wait for it.

Behind a :class:`Clock`, so tests move time by hand instead of sleeping.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Reads the time and waits for it."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...

    async def sleep_until(self, when: datetime) -> None:
        """Wait until ``when``; may return early, callers look at :meth:`now` again."""
        ...


class SystemClock:
    """The wall clock. Naps at most a minute, so a suspend or clock step is noticed."""

    max_nap_s = 60.0

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, when: datetime) -> None:
        delay = (when - self.now()).total_seconds()
        await asyncio.sleep(min(max(delay, 0.0), self.max_nap_s))
