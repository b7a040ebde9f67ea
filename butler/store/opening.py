"""Opening a butler's database: connect, migrate, check the schema is this install's.

Apart from :mod:`butler.daemon` (which assembles the whole butler over it) so
that commands which only need the database (``butler credentials``, ``db
migrate``, ``notify``) do not import the daemon's stack: about half of
``butler credentials list``'s CPU went to importing the daemon.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from butler.essentials import Essentials
from butler.store.budget import Budget
from butler.store.db import Database, redact_dsn
from butler.store.embedded import EmbeddedPostgres
from butler.store.install import Install, Leases, check_install, hold
from butler.store.migrations import Migration, migrate

log = logging.getLogger("butler.daemon")


@dataclass
class OpenDatabase:
    """The database a daemon opened, and the embedded server behind it, if any."""

    db: Database
    embedded: EmbeddedPostgres | None = None
    applied: list[Migration] = field(default_factory=list)
    #: A serving daemon's own hold on its schema (:mod:`butler.store.install`); None when
    #: held by a roster's shared :class:`Leases`, which the roster releases.
    lease: Leases | None = None

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


async def open_store(
    butler: Essentials,
    dsn: str | None = None,
    *,
    serving: bool = False,
    leases: Leases | None = None,
    budget: Budget | None = None,
) -> OpenDatabase:
    """Connect to the butler's schema, migrate it and check it holds this butler's data.

    At ``dsn`` when given (a roster's shared embedded database), else at the
    configured URL, else in an embedded PostgreSQL started here and stopped
    by :meth:`OpenDatabase.close`. ``serving``: the daemon's own opening, which
    holds the schema until closed and is refused while another daemon holds it;
    ``leases``: the same, held on a roster's shared connection. ``budget``: a
    large roster's cap on its connections, which this pool joins; it then keeps
    no connection open for its own sake, and its health checks are asked on
    the leases' connection while it has none.
    """
    assert butler.db_schema is not None, "essentials whose schema is unclear: load the folder"
    embedded = None
    dsn = dsn or butler.db_url
    if not dsn:
        embedded, dsn = await start_embedded()
    probe = leases.ping if leases is not None and budget is not None else None
    floor = 1 if budget is None else 0
    db = Database(dsn, butler.db_schema, min_size=floor, probe=probe, budget=budget)
    lease = None
    try:
        await db.connect()
        applied = await migrate(db)
        await check_install(db, Install(butler.name, butler.config_dir, butler.schema_chosen))
        if leases is not None:
            await leases.hold(db, butler.name)
        elif serving:
            lease = await hold(db, butler.name)
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
