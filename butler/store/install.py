"""Whose data a schema holds, and which daemon serves it now.

A butler's schema is named after the butler unless ``[butler.db] schema``
says otherwise, so two butlers named ``health`` from two folders (two
checkouts, two homes of root, two rosters) would meet in one schema. The
first butler folder to open a schema claims it (``butler_install``); another
folder is refused unless its owner named the schema on purpose, which is how
two folders share one butler's data.

A daemon serving the butler holds a session-level advisory lock on a
connection of its own for as long as it runs (one connection for all the
butlers of a roster at one database), and notes its pid and host beside the
claim. A second daemon for the same schema on the same database is refused
in one line naming them. The lock goes with the connection: a daemon killed
outright leaves nothing behind to clean up. A PostgreSQL restart ends the
lock with every connection: the daemon takes it again when the database is
back, or stops, saying who took it meanwhile (:meth:`Lease.keep`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from butler.errors import DatabaseError
from butler.store.db import Database, quote_ident, redact_dsn

log = logging.getLogger("butler.store.install")


@dataclass(frozen=True)
class Install:
    """One butler as the database knows it: its name, its folder, whether it chose its schema."""

    name: str
    folder: Path
    #: True when ``[butler.db] schema`` (or ``BUTLER_DB_SCHEMA``) names the schema: the
    #: owner's word that this folder may share the data already there.
    chosen_schema: bool


class InstallTaken(DatabaseError):
    """The schema belongs to another butler folder, or another daemon serves it."""


async def check_install(db: Database, install: Install) -> None:
    """Claim the schema for ``install`` when unclaimed; refuse when another folder holds it."""
    folder = str(install.folder.resolve())
    await db.execute(
        "INSERT INTO butler_install (name, folder) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        install.name,
        folder,
    )
    row = await db.fetchrow("SELECT name, folder, claimed_at FROM butler_install")
    if row is None or row["folder"] == folder or install.chosen_schema:
        return
    raise InstallTaken(
        f"{install.name}: schema {db.schema!r} at {redact_dsn(db.dsn)} holds the data of "
        f"butler {row['name']!r} from {row['folder']} (since {row['claimed_at']:%Y-%m-%d}), "
        f"not of {folder}; give this butler its own data with [butler.db] schema = "
        f'"{db.schema}_2" in its butler.toml, or share that data on purpose (the same '
        f'butler, moved) with schema = "{db.schema}"'
    )


def _lock_key(schema: str) -> int:
    digest = hashlib.sha256(f"butler-daemon:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


#: How often a serving daemon checks the connection that holds its schema's lock.
KEEP_EVERY_S = 2.0
#: Waits between attempts to take the lock again while the database is away.
RETAKE_FIRST_S, RETAKE_MOST_S = 0.2, 5.0
#: How long a health check waits for the holding connection's answer.
PING_WAIT_S = 2.0
#: What losing a connection to PostgreSQL raises (asyncpg's protocol may be caught
#: mid-operation by the server going away: an InternalClientError).
LOST = (
    OSError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InternalClientError,
    TimeoutError,
)


class LeaseLost(InstallTaken):
    """The database came back with another daemon holding the schema: this one must stop."""


class Leases:
    """A daemon's hold on its butlers' schemas at one database server.

    One connection of its own holds an advisory lock per schema: a roster of
    a hundred butlers holds them all on one connection, not a hundred (a
    server's ``max_connections`` is 100 by default). Operations on the
    connection take turns: it runs one query at a time.
    """

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: asyncpg.Connection | None = None
        #: schema -> (the butler's name, its database), in the order taken.
        self.held: dict[str, tuple[str, Database]] = {}
        self._turn = asyncio.Lock()

    async def hold(self, db: Database, name: str) -> None:
        """Take ``db``'s schema for butler ``name``, or raise naming who holds it."""
        async with self._turn:
            if db.schema in self.held:  # a lock is re-entrant on its own connection
                raise InstallTaken(_held_line(name, db, None))
            if self.conn is not None and self.conn.is_closed() and self.held:
                # The locks taken so far went with that connection: a new one must take
                # them all again, or they would stay listed here and held by nobody.
                await self._retake_all()
            elif self.conn is None or self.conn.is_closed():
                self.conn = await _connect(self.dsn)
            await _take(self.conn, db, name)
            self.held[db.schema] = (name, db)

    async def keep(self, every: float = KEEP_EVERY_S) -> None:
        """Hold the locks for as long as the daemon serves; raise :class:`LeaseLost` if lost.

        A lock ends with its connection, and a PostgreSQL restart ends every
        connection: once the database is back every lock is taken again, or,
        if another daemon took one meanwhile, this one is told to stop, so
        that two daemons never serve one butler.
        """
        while True:
            await asyncio.sleep(every)
            if not await self._alive():
                log.warning(
                    "lost the connection holding the butlers' schemas; taking them again "
                    "once the database answers",
                    extra={"schemas": list(self.held)},
                )
                await self._retake()

    async def ping(self) -> bool:
        """Whether the database answers right now, asked on the holding connection."""
        try:  # not behind a retake that waits for the database to come back
            await asyncio.wait_for(self._turn.acquire(), PING_WAIT_S)
        except TimeoutError:
            return False
        try:
            if self.conn is None or self.conn.is_closed():
                return False
            await self.conn.fetchval("SELECT 1", timeout=PING_WAIT_S)
        except LOST:
            return False
        finally:
            self._turn.release()
        return True

    async def _alive(self) -> bool:
        async with self._turn:
            if self.conn is None or self.conn.is_closed():
                return False
            try:
                await self.conn.fetchval("SELECT 1", timeout=10)
                return True
            except Exception:  # whatever failed, this connection is done: take another
                self.conn.terminate()
                return False

    async def _retake(self) -> None:
        wait = RETAKE_FIRST_S
        while True:
            try:
                async with self._turn:
                    await self._retake_all()
            except LOST:
                await asyncio.sleep(wait)
                wait = min(wait * 2, RETAKE_MOST_S)
                continue
            log.warning("the butlers' schemas are held again", extra={"schemas": list(self.held)})
            return

    async def _retake_all(self) -> None:
        """Every lock on a new connection; LeaseLost naming the first another daemon took."""
        conn = await _connect(self.dsn)
        try:
            for schema, (name, db) in self.held.items():
                try:
                    await _take(conn, db, name)
                except InstallTaken as exc:
                    # A note naming this process is its own, from before: the new holder
                    # has taken the lock and not noted itself yet.
                    ours = f"by pid {os.getpid()} on host {socket.gethostname()}"
                    held = str(exc).replace(ours, "by another daemon (not noted yet)", 1)
                    raise LeaseLost(
                        f"{name}: the connection holding schema {schema!r} was lost "
                        f"(the database restarted?) and another daemon took it meanwhile: "
                        f"{held}; this daemon stops"
                    ) from None
        except BaseException:
            await conn.close()
            raise
        self.conn = conn

    async def release(self) -> None:
        """Let go: the notes of who held them are cleared, the locks go with the connection."""
        async with self._turn:
            if self.conn is None or self.conn.is_closed():
                return
            try:
                for schema in self.held:
                    await self.conn.execute(
                        f"UPDATE {quote_ident(schema)}.butler_install SET holder_pid = NULL,"
                        " holder_host = NULL, held_since = NULL"
                        " WHERE holder_pid = $1 AND holder_host = $2",
                        os.getpid(),
                        socket.gethostname(),
                    )
            except LOST:
                pass  # the database went away: the locks went with it
            finally:
                await self.conn.close()


async def hold(db: Database, name: str) -> Leases:
    """A daemon's lease on ``db``'s schema alone, or raise naming who holds it."""
    leases = Leases(db.dsn)
    try:
        await leases.hold(db, name)
    except BaseException:
        await leases.release()
        raise
    return leases


async def _connect(dsn: str) -> asyncpg.Connection:
    return await asyncpg.connect(dsn, timeout=10)


async def _take(conn: asyncpg.Connection, db: Database, name: str) -> None:
    """Take the schema's lock on ``conn`` and note its holder; or InstallTaken."""
    table = f"{quote_ident(db.schema)}.butler_install"
    taken = await conn.fetchval("SELECT pg_try_advisory_lock($1)", _lock_key(db.schema))
    if not taken:
        row = await conn.fetchrow(
            f"SELECT holder_pid, holder_host, held_since, folder FROM {table}"
        )
        raise InstallTaken(_held_line(name, db, row))
    await conn.execute(
        f"UPDATE {table} SET holder_pid = $1, holder_host = $2, held_since = now()",
        os.getpid(),
        socket.gethostname(),
    )


def _held_line(name: str, db: Database, row: asyncpg.Record | None) -> str:
    who = "another daemon"
    if row is not None and row["holder_pid"] is not None:
        since = f" since {row['held_since']:%Y-%m-%d %H:%M:%S %Z}" if row["held_since"] else ""
        who = f"pid {row['holder_pid']} on host {row['holder_host']}{since}"
    folder = row["folder"] if row is not None and row["folder"] else "DIR"
    return (
        f"{name}: already served by {who} (schema {db.schema!r} at {redact_dsn(db.dsn)}); "
        f"stop that one first (butler stop -c {folder}), or give this butler its own data "
        "with [butler.db] schema in its butler.toml"
    )
