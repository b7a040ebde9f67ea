"""Per-day figures of the sessions table, for charts: kept in ``session_days``.

:func:`refresh` recomputes only the days that hold a session changed since the
last refresh (a row's ``updated_at`` moves on every change, and is indexed), so
a chart over 90 days reads a few hundred rows at a million sessions. Days are
UTC days. Concurrent refreshes take turns on the one ``session_days_refreshed``
row; a reader never sees a day half recomputed.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from butler.store.db import Database

#: A change stamped before the last refresh but committed after it is still seen.
OVERLAP = timedelta(seconds=2)
#: How long the mark may stay put while nothing changes.
STALE = timedelta(minutes=1)

_DAY = (
    "s.created_at >= t.day::timestamp AT TIME ZONE 'UTC'"
    " AND s.created_at < (t.day + 1)::timestamp AT TIME ZONE 'UTC'"
)
_COUNTS = (
    "INSERT INTO session_days"
    " SELECT t.day, s.status, s.runtime, count(*), coalesce(sum(s.input_tokens), 0),"
    " coalesce(sum(s.output_tokens), 0), coalesce(sum(s.cost_usd), 0)"
    f" FROM unnest($1::date[]) AS t(day) JOIN sessions s ON {_DAY} GROUP BY 1, 2, 3"
)
_DURATIONS = (
    "INSERT INTO session_day_durations"
    " SELECT t.day, count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY s.duration_ms),"
    " percentile_cont(0.95) WITHIN GROUP (ORDER BY s.duration_ms)"
    f" FROM unnest($1::date[]) AS t(day) JOIN sessions s ON {_DAY}"
    " AND s.status IN ('succeeded', 'failed', 'cancelled') AND s.duration_ms IS NOT NULL"
    " GROUP BY 1"
)
_TOUCHED = "SELECT DISTINCT (created_at AT TIME ZONE 'UTC')::date AS day FROM sessions"


async def refresh(db: Database) -> int:
    """Bring the figures up to date; return how many days were recomputed."""
    async with db.pool.acquire() as conn, conn.transaction():
        through = await conn.fetchval("SELECT through FROM session_days_refreshed FOR UPDATE")
        now = await conn.fetchval("SELECT clock_timestamp()")
        if through is None:
            found = await conn.fetch(_TOUCHED)
        else:
            found = await conn.fetch(_TOUCHED + " WHERE updated_at > $1", through - OVERLAP)
        days = [r["day"] for r in found]
        if days:
            await conn.execute("DELETE FROM session_days WHERE day = ANY($1::date[])", days)
            await conn.execute(
                "DELETE FROM session_day_durations WHERE day = ANY($1::date[])", days
            )
            await conn.execute(_COUNTS, days)
            await conn.execute(_DURATIONS, days)
        # Nothing changed: leave the mark (no write per live poll) unless it is old
        # enough that the window of rows to look at next time has grown.
        if days or through is None or now - through > STALE:
            await conn.execute("UPDATE session_days_refreshed SET through = $1", now)
    return len(days)


async def daily(db: Database, first: date) -> dict[str, list[dict[str, Any]]]:
    """Figures from ``first`` (a UTC day) on: counts by status and runtime, durations."""
    await refresh(db)
    counts = await db.fetch(
        "SELECT day, status, runtime, sessions, input_tokens, output_tokens,"
        " cost_usd::float8 AS cost_usd FROM session_days WHERE day >= $1 ORDER BY day",
        first,
    )
    durations = await db.fetch(
        "SELECT day, ended, p50_ms, p95_ms FROM session_day_durations WHERE day >= $1 ORDER BY day",
        first,
    )
    return {"counts": [dict(r) for r in counts], "durations": [dict(r) for r in durations]}
