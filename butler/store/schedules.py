"""The ``schedules`` table: when each of the butler's schedules last fired.

The database, not the process, remembers fire times, so a daemon restarted
after a crash neither fires a slot twice nor forgets one it missed. Claiming a
slot is one conditional ``UPDATE``: when the clock loop and a ``tick`` call (or
two processes) race for the same slot, exactly one of them wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from butler.store.db import Database

#: Who fired a schedule: the daemon's own clock, an external ``tick``, or a person.
FiredVia = Literal["clock", "tick", "manual"]


@dataclass(frozen=True)
class ScheduleEntry:
    """A schedule as configured: what the table is kept in step with."""

    name: str
    cron: str
    timezone: str


@dataclass(frozen=True)
class ScheduleRecord:
    """One row of the table."""

    name: str
    cron: str
    timezone: str
    configured_at: datetime
    last_fired_at: datetime | None
    last_fired_via: str | None

    @property
    def since(self) -> datetime:
        """The moment after which a cron slot counts as not yet fired."""
        if self.last_fired_at is None:
            return self.configured_at
        return max(self.configured_at, self.last_fired_at)


class ScheduleStore:
    """Read the schedules' fire times and claim slots."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def sync(self, entries: Iterable[ScheduleEntry], now: datetime) -> None:
        """Make the table hold exactly ``entries``.

        A new schedule, or one whose cron or time zone changed, is configured
        ``now``: slots before that were never its own, so none is caught up.
        Rows of schedules no longer configured go, so re-adding one later does
        not fire for the time it was absent.
        """
        entries = list(entries)
        async with self.db.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "DELETE FROM schedules WHERE NOT (name = ANY($1::text[]))",
                [e.name for e in entries],
            )
            for entry in entries:
                await conn.execute(
                    "INSERT INTO schedules (name, cron, timezone, configured_at)"
                    " VALUES ($1, $2, $3, $4)"
                    " ON CONFLICT (name) DO UPDATE SET"
                    "  configured_at = CASE"
                    "   WHEN schedules.cron <> EXCLUDED.cron"
                    "     OR schedules.timezone <> EXCLUDED.timezone"
                    "   THEN EXCLUDED.configured_at ELSE schedules.configured_at END,"
                    "  cron = EXCLUDED.cron, timezone = EXCLUDED.timezone",
                    entry.name,
                    entry.cron,
                    entry.timezone,
                    now,
                )

    async def all(self) -> dict[str, ScheduleRecord]:
        """Every row, by schedule name."""
        rows = await self.db.fetch(
            "SELECT name, cron, timezone, configured_at, last_fired_at, last_fired_via"
            " FROM schedules ORDER BY name"
        )
        return {r["name"]: ScheduleRecord(**dict(r)) for r in rows}

    async def claim(self, name: str, slot: datetime, fired_at: datetime, via: FiredVia) -> bool:
        """Record a fire of the cron ``slot`` unless something fired at or after it.

        Returns whether this caller won the slot and so must run it.
        """
        result = await self.db.execute(
            "UPDATE schedules SET last_fired_at = $3, last_fired_via = $4"
            " WHERE name = $1 AND (last_fired_at IS NULL OR last_fired_at < $2)",
            name,
            slot,
            fired_at,
            via,
        )
        return result.endswith(" 1")

    async def record(self, name: str, fired_at: datetime, via: FiredVia) -> None:
        """Record a fire that needs no slot: a person ran the schedule by hand."""
        await self.db.execute(
            "UPDATE schedules SET last_fired_at = $2, last_fired_via = $3 WHERE name = $1",
            name,
            fired_at,
            via,
        )
