"""The workers serving a butler: their rows in ``workers`` (migration 017) and what
PgQueuer knows of their running sessions (docs/scaling.md).

A worker writes its row when it starts, beats it every ``beat_s`` seconds and
deletes it when it stops cleanly. A row that missed three beats is a worker that
died (killed, its machine gone, cut off from the database): it is listed as
``lost`` until a day has passed, then the next worker to start removes it.

Running sessions are PgQueuer's own count (``Queries.active_workers``: the jobs
picked per queue manager), so the listing and the engine never disagree about
who holds what.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from butler.store.db import Database
from butler.store.session_jobs import PROTOCOL

#: A row is lost when its last beat is older than this many beats.
MISSED_BEATS = 3
#: A lost worker's row is removed after this long (by the next worker to start).
FORGET_AFTER = "1 day"
#: Longest worker name or host kept from a row (a worker writes them; the listing shows them).
MAX_TEXT = 200


@dataclass(frozen=True)
class WorkerRow:
    """What a worker says of itself when it registers with one butler."""

    name: str
    host: str
    butlers: list[str]
    capacity: int
    queue_manager_id: uuid.UUID
    beat_s: float
    #: Its butler version, hand-over protocol and newest migration known (migration 018).
    version: str
    protocol: int
    migration: int


def speaks(protocol: int | None, version: str | None) -> str:
    """What a worker speaks, in words."""
    if protocol is None:
        return "a butler from before hand-over protocols"
    return f"butler {version}, hand-over protocol {protocol}"


class WorkerRows:
    """The ``workers`` table of one butler's schema."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def register(self, row: WorkerRow) -> None:
        """Write (or rewrite, after a restart under the same name) the worker's row."""
        await self.db.execute(
            f"DELETE FROM workers WHERE heartbeat_at < now() - interval '{FORGET_AFTER}'"
        )
        await self.db.execute(
            "INSERT INTO workers (name, host, butlers, capacity, queue_manager_id, beat_s,"
            " version, protocol, migration) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
            " ON CONFLICT (name) DO UPDATE SET host = $2, butlers = $3, capacity = $4,"
            " queue_manager_id = $5, beat_s = $6, version = $7, protocol = $8,"
            " migration = $9, started_at = now(), heartbeat_at = now()",
            row.name[:MAX_TEXT],
            row.host[:MAX_TEXT],
            row.butlers,
            row.capacity,
            row.queue_manager_id,
            row.beat_s,
            row.version[:MAX_TEXT],
            row.protocol,
            row.migration,
        )

    async def beat(self, name: str) -> None:
        await self.db.execute("UPDATE workers SET heartbeat_at = now() WHERE name = $1", name)

    async def leave(self, name: str) -> None:
        """The worker stopped cleanly: it is no longer listed."""
        await self.db.execute("DELETE FROM workers WHERE name = $1", name)

    async def live(self) -> int:
        """How many workers serving this butler beat recently and speak this daemon's
        hand-over protocol (only those can run its sessions)."""
        return await self.db.fetchval(
            "SELECT count(*) FROM workers"
            f" WHERE heartbeat_at >= now() - make_interval(secs => beat_s * {MISSED_BEATS})"
            " AND protocol IS NOT DISTINCT FROM $1",
            PROTOCOL,
        )

    async def strangers(self) -> list[str]:
        """The live workers of this butler that speak another protocol, each as
        ``name (butler V, protocol P)``."""
        rows = await self.db.fetch(
            "SELECT name, version, protocol FROM workers"
            f" WHERE heartbeat_at >= now() - make_interval(secs => beat_s * {MISSED_BEATS})"
            " AND protocol IS DISTINCT FROM $1 ORDER BY name",
            PROTOCOL,
        )
        return [f"{r['name']} ({speaks(r['protocol'], r['version'])})" for r in rows]

    async def listing(self) -> list[dict[str, Any]]:
        """Every worker of this butler, newest beat first, with its running sessions."""
        rows = await self.db.fetch(
            "SELECT name, host, butlers, capacity, queue_manager_id, started_at, heartbeat_at,"
            " version, protocol, migration,"
            " extract(epoch FROM now() - heartbeat_at)::float8 AS silent_s,"
            f" heartbeat_at >= now() - make_interval(secs => beat_s * {MISSED_BEATS}) AS up"
            " FROM workers ORDER BY heartbeat_at DESC"
        )
        running = await self._running()
        return [
            {
                "name": r["name"],
                "host": r["host"],
                "butlers": list(r["butlers"]),
                "capacity": r["capacity"],
                "running": running.get(r["queue_manager_id"], 0),
                "status": _status(r["up"], r["protocol"]),
                "version": r["version"],
                "protocol": r["protocol"],
                "migration": r["migration"],
                "started_at": _iso(r["started_at"]),
                "heartbeat_at": _iso(r["heartbeat_at"]),
                "silent_s": round(max(r["silent_s"], 0.0), 1),
            }
            for r in rows
        ]

    async def _running(self) -> dict[uuid.UUID, int]:
        """Picked jobs per queue manager, as PgQueuer counts them."""
        # A pool connection serves: this query reads no JSON, the one thing our codec changes.
        async with self.db.pool.acquire() as conn:
            # Here, not at the top: PgQueuer is a fifth of a second of a start's imports,
            # and only a roster with workers asks this.
            from pgqueuer import AsyncpgDriver, Queries

            found = await Queries(AsyncpgDriver(conn)).active_workers()
        return {uuid.UUID(str(w.queue_manager_id)): w.active_jobs for w in found}


def _status(up: bool, protocol: int | None) -> str:
    """``up``, ``lost`` (three beats missed), or ``incompatible`` (up, but given no
    session: it speaks another hand-over protocol than the daemon's)."""
    if not up:
        return "lost"
    return "up" if protocol == PROTOCOL else "incompatible"


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def merge(listings: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One line per worker from several butlers' listings: its running sessions summed."""
    merged: dict[str, dict[str, Any]] = {}
    for listing in listings:
        for row in listing:
            seen = merged.get(row["name"])
            if seen is None:
                merged[row["name"]] = dict(row)
                continue
            seen["running"] += row["running"]
            if row["silent_s"] < seen["silent_s"]:
                for key in ("heartbeat_at", "silent_s", "status"):
                    seen[key] = row[key]
    return sorted(merged.values(), key=lambda r: (r["status"] != "up", r["host"], r["name"]))


async def have_workers_table(conn: asyncpg.Connection, schemas: Iterable[str]) -> set[str]:
    """Those of ``schemas`` that have a ``workers`` table (migration 017), asked on
    ``conn`` without creating any schema."""
    found = set()
    for schema in schemas:
        if await conn.fetchval("SELECT to_regclass(format('%I.workers', $1::text))", schema):
            found.add(schema)
    return found
