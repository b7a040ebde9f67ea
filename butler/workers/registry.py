"""A worker makes itself known: its row in each served butler's ``workers`` table,
beaten while it runs, removed when it stops cleanly (docs/scaling.md).

PgQueuer beats per picked job (that is how a dead worker's session is noticed
and recorded); it keeps no list of workers, so an idle one would be invisible.
This row says what ``butler workers`` and the roster page show: host, butlers,
capacity, last heartbeat. Running sessions come from PgQueuer's picked jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg

import butler as package
from butler.config import ButlerConfig
from butler.errors import ButlerError, UserError
from butler.store.db import Database, redact_dsn
from butler.store.migrations import known
from butler.store.session_jobs import PROTOCOL
from butler.store.workers import WorkerRow, WorkerRows, have_workers_table, merge

log = logging.getLogger(__name__)

#: Longest pause between two beats, whatever the job heartbeat timeout.
MAX_BEAT_S = 10.0


class Registry:
    """This worker's rows, one per served butler, and the loop that beats them."""

    def __init__(self, name: str, capacity: int, beat_s: float) -> None:
        self.name = name
        self.capacity = capacity
        self.beat_s = min(beat_s, MAX_BEAT_S)
        self._rows: list[WorkerRows] = []

    async def register(self, served: Sequence[tuple[str, Database, uuid.UUID]]) -> None:
        """Write a row in each served butler's schema: ``(butler, its database, the
        queue manager serving it)``."""
        butlers = [name for name, _, _ in served]
        for butler, db, manager in served:
            rows = WorkerRows(db)
            row = WorkerRow(
                name=self.name,
                host=socket.gethostname(),
                butlers=butlers,
                capacity=self.capacity,
                queue_manager_id=manager,
                beat_s=self.beat_s,
                version=package.__version__,
                protocol=PROTOCOL,
                migration=known(),
            )
            try:
                await rows.register(row)
            except asyncpg.UndefinedTableError:
                raise ButlerError(
                    f"{butler}: its schema {db.schema!r} has no workers table: its daemon "
                    "runs an older butler; upgrade it and restart it (migration 017), then "
                    "start this worker again"
                ) from None
            self._rows.append(rows)

    async def beat_forever(self) -> None:
        """Beat every ``beat_s`` until cancelled; a database away is noted, then retried."""
        failing = False
        while True:
            await asyncio.sleep(self.beat_s)
            for rows in self._rows:
                try:
                    await rows.beat(self.name)
                    failing = False
                except Exception as exc:  # the database away: the worker goes on, listed lost
                    if not failing:  # once per outage, not every beat of a long one
                        log.warning("worker heartbeat not written: %s: %s", type(exc).__name__, exc)
                    failing = True

    async def leave(self) -> None:
        """A clean stop: the worker is no longer listed."""
        for rows in self._rows:
            with contextlib.suppress(Exception):
                await rows.leave(self.name)


async def roster_workers(
    configs: Sequence[ButlerConfig], database_url: str
) -> list[dict[str, Any]]:
    """Every worker serving one of ``configs``, one line each (``butler workers``).

    A butler whose schema has no ``workers`` table yet (its daemon never started
    since migration 017) has no worker to list.
    """
    if not database_url:
        raise UserError(
            "butler workers: no database: give --database-url (or DATABASE_URL) naming the "
            "PostgreSQL the butlers' daemons and workers share"
        )
    listings = []
    for config in await _with_workers_table(configs, database_url):
        db = Database(database_url, config.db_schema, max_size=1)
        await db.connect()
        try:
            listings.append(await WorkerRows(db).listing())
        finally:
            await db.close()
    return merge(listings)


async def _with_workers_table(
    configs: Sequence[ButlerConfig], database_url: str
) -> list[ButlerConfig]:
    """The butlers whose schema has a ``workers`` table (a listing creates no schema)."""
    try:
        conn = await asyncpg.connect(database_url, timeout=10)
    except (OSError, asyncpg.PostgresError, TimeoutError, ValueError) as exc:
        raise UserError(
            f"butler workers: cannot connect to PostgreSQL at {redact_dsn(database_url)}: "
            f"{exc}; expected the database the butlers' daemons and workers share"
        ) from None
    try:
        found = await have_workers_table(conn, [config.db_schema for config in configs])
    finally:
        await conn.close()
    return [config for config in configs if config.db_schema in found]
