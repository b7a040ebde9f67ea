"""Whose data a schema holds, and which daemon serves it now.

A butler's schema is named after the butler unless ``[butler.db] schema``
says otherwise, so two butlers named ``health`` from two folders (two
checkouts, two homes of root, two rosters) would meet in one schema. The
first butler folder to open a schema claims it (``butler_install``); another
folder is refused unless its owner named the schema on purpose, which is how
two folders share one butler's data.

A daemon serving the butler holds a session-level advisory lock on its own
connection for as long as it runs, and notes its pid and host beside the
claim. A second daemon for the same schema on the same database is refused
in one line naming them. The lock goes with the connection: a daemon killed
outright leaves nothing behind to clean up.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from butler.errors import DatabaseError
from butler.store.db import Database, quote_ident, redact_dsn


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


class Lease:
    """A daemon's hold on its butler's schema: an advisory lock on a connection of its own."""

    def __init__(self, conn: asyncpg.Connection, schema: str) -> None:
        self.conn = conn
        self.schema = schema

    async def release(self) -> None:
        """Let go: the note of who held it is cleared, the lock goes with the connection."""
        if self.conn.is_closed():
            return
        try:
            await self.conn.execute(
                "UPDATE butler_install SET holder_pid = NULL, holder_host = NULL,"
                " held_since = NULL WHERE holder_pid = $1 AND holder_host = $2",
                os.getpid(),
                socket.gethostname(),
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
            pass  # the database went away: the lock went with it
        finally:
            await self.conn.close()


async def hold(db: Database, name: str) -> Lease:
    """Take the daemon's lease on ``db``'s schema, or raise naming who holds it."""
    conn = await asyncpg.connect(
        db.dsn, timeout=10, server_settings={"search_path": quote_ident(db.schema)}
    )
    try:
        taken = await conn.fetchval("SELECT pg_try_advisory_lock($1)", _lock_key(db.schema))
        if not taken:
            row = await conn.fetchrow(
                "SELECT holder_pid, holder_host, held_since FROM butler_install"
            )
            raise InstallTaken(_held_line(name, db, row))
        await conn.execute(
            "UPDATE butler_install SET holder_pid = $1, holder_host = $2, held_since = now()",
            os.getpid(),
            socket.gethostname(),
        )
    except BaseException:
        await conn.close()
        raise
    return Lease(conn, db.schema)


def _held_line(name: str, db: Database, row: asyncpg.Record | None) -> str:
    who = "another daemon"
    if row is not None and row["holder_pid"] is not None:
        since = f" since {row['held_since']:%Y-%m-%d %H:%M:%S %Z}" if row["held_since"] else ""
        who = f"pid {row['holder_pid']} on host {row['holder_host']}{since}"
    return (
        f"{name}: already served by {who} (schema {db.schema!r} at {redact_dsn(db.dsn)}); "
        "stop that one first (butler stop), or give this butler its own data with "
        "[butler.db] schema in its butler.toml"
    )
