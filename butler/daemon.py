"""Assembles one butler: its database (opened and migrated), its stores and spawner.

Serving is :func:`butler.roster.up`'s: ``butler run`` is a roster of one.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from butler.builders.manager import BuilderManager
from butler.config import ButlerConfig
from butler.context import ButlerContext
from butler.notify import Notifier
from butler.runtimes.registry import get_adapter
from butler.scheduler import Scheduler
from butler.spawner import preflight
from butler.spawner.recovery import recover
from butler.spawner.spawner import Spawner
from butler.store.credentials import CredentialStore
from butler.store.db import Database, redact_dsn
from butler.store.deliveries import DeliveryStore
from butler.store.embedded import EmbeddedPostgres
from butler.store.install import Install, Lease, check_install, hold
from butler.store.memory import PostgresMemory
from butler.store.migrations import Migration, migrate
from butler.store.schedules import ScheduleStore
from butler.store.sessions import SessionStore
from butler.store.state import StateStore

log = logging.getLogger("butler.daemon")


@dataclass
class OpenDatabase:
    """The database a daemon opened, and the embedded server behind it, if any."""

    db: Database
    embedded: EmbeddedPostgres | None = None
    applied: list[Migration] = field(default_factory=list)
    #: A serving daemon's hold on its schema (:mod:`butler.store.install`).
    lease: Lease | None = None

    async def close(self) -> None:
        if self.lease is not None:
            await self.lease.release()
        await self.db.close()
        if self.embedded is not None:
            await self.embedded.stop()


def initdb_notice(pgdata: Path) -> contextlib.AbstractContextManager[object]:
    """initdb takes seconds: a spinner while it runs on a terminal, else one log line."""
    message = "initialising the embedded database (first start, a few seconds)"
    if sys.stderr.isatty():
        from rich.console import Console  # only a person at a terminal sees it

        return Console(stderr=True).status(f"{message}…")
    log.info(message, extra={"pgdata": str(pgdata)})
    return contextlib.nullcontext()


async def start_embedded() -> tuple[EmbeddedPostgres, str]:
    """Start the embedded PostgreSQL (initialising it the first time); it and its DSN."""
    embedded = EmbeddedPostgres()
    notice: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if not (embedded.pgdata / "PG_VERSION").exists():
        notice = initdb_notice(embedded.pgdata)
    with notice:
        dsn = await embedded.start()
    log.info("embedded database started", extra={"pgdata": str(embedded.pgdata)})
    return embedded, dsn


async def open_database(
    config: ButlerConfig, dsn: str | None = None, *, serving: bool = False
) -> OpenDatabase:
    """Connect to the butler's schema, migrate it and check it holds this butler's data.

    At ``dsn`` when given (a roster's shared embedded database), else at the
    configured URL, else in an embedded PostgreSQL started here and stopped
    by :meth:`OpenDatabase.close`. ``serving``: the daemon's own opening, which
    holds the schema until closed and is refused while another daemon holds it.
    """
    embedded = None
    dsn = dsn or config.butler.db.url
    if not dsn:
        embedded, dsn = await start_embedded()
    db = Database(dsn, config.db_schema)
    lease = None
    try:
        await db.connect()
        applied = await migrate(db)
        chosen = config.butler.db.schema_ is not None
        await check_install(db, Install(config.name, config.config_dir, chosen))
        lease = await hold(db, config.name) if serving else None
    except BaseException:
        await db.close()
        if embedded is not None:
            await embedded.stop()
        raise
    log.info(
        "database ready",
        extra={
            "dsn": redact_dsn(dsn),
            "schema": db.schema,
            "migrations_applied": [m.version for m in applied],
        },
    )
    return OpenDatabase(db, embedded, applied, lease)


async def assemble(config: ButlerConfig, db: Database) -> ButlerContext:
    """The butler's stores and spawner over an open database."""
    sessions = SessionStore(db, config.butler.max_output_bytes)
    memory = PostgresMemory(db, config.butler.memory.max_episodes)
    adapter = get_adapter(config.runtime.type, config.runtime, config.roster_dir)
    credentials = CredentialStore(db)
    spawner = Spawner(config, adapter, sessions, credentials, memory=memory)
    await recover(spawner)
    await preflight.check(config, adapter, credentials)
    builders = BuilderManager(config, spawner, sessions)
    await builders.adopt_survivors()
    notifier = Notifier(config, DeliveryStore(db), credentials)
    return ButlerContext(
        config=config,
        db=db,
        state=StateStore(db),
        sessions=sessions,
        spawner=spawner,
        scheduler=Scheduler(config.butler.schedule, ScheduleStore(db), spawner, notifier=notifier),
        builders=builders,
        notifier=notifier,
    )
