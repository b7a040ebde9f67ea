"""Quiet hours: when only high-priority messages go out and the rest wait.

``quiet = "22:00-07:00"`` is read in ``[butler.notify] timezone``; a window
whose start is after its end runs over midnight. Pure functions of the
time, so tests need no clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo


@dataclass(frozen=True)
class QuietHours:
    """A daily window in a time zone."""

    start: time
    end: time
    zone: ZoneInfo

    @classmethod
    def parse(cls, text: str | None, timezone: str) -> QuietHours | None:
        """The window ``"HH:MM-HH:MM"`` (checked by the config), or None when unset."""
        if not text:
            return None
        first, last = text.split("-")
        return cls(time.fromisoformat(first), time.fromisoformat(last), ZoneInfo(timezone))

    def until(self, now: datetime) -> datetime | None:
        """When the window holding ``now`` ends (UTC), or None when ``now`` is outside it."""
        local = now.astimezone(self.zone)
        clock = local.time().replace(tzinfo=None)
        if self.start == self.end:
            return None
        if self.start < self.end:
            inside = self.start <= clock < self.end
            ends_on = local.date()
        else:  # over midnight: the evening part ends tomorrow, the morning part today
            inside = clock >= self.start or clock < self.end
            ends_on = local.date() + timedelta(days=1 if clock >= self.start else 0)
        if not inside:
            return None
        return datetime.combine(ends_on, self.end, tzinfo=self.zone).astimezone(UTC)
