"""Numbered SQL migrations, applied once each, safely from several daemons at once.

Files are ``butler/migrations/NNN_name.sql``, shipped inside the package and
read through ``importlib.resources``, so a wheel or a plain ``pip install .``
finds them as an editable install does. Each runs in its own transaction and is
recorded in ``butler_migrations`` of the butler's schema. A session-level
advisory lock per schema makes two daemons starting together apply each
migration exactly once.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable

import asyncpg

from butler.errors import DatabaseError
from butler.store.db import Database

_FILE = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    """One migration file."""

    version: int
    name: str
    path: Traversable


def migrations_dir() -> Traversable:
    """The package's folder of migration files."""
    return resources.files("butler").joinpath("migrations")


def discover(folder: Traversable | None = None) -> list[Migration]:
    """Every migration in ``folder``, in version order."""
    folder = folder or migrations_dir()
    if not folder.is_dir():
        raise DatabaseError(f"{folder}: migrations folder not found")
    found: list[Migration] = []
    files = [p for p in folder.iterdir() if p.name.endswith(".sql")]
    for path in sorted(files, key=lambda p: p.name):
        match = _FILE.match(path.name)
        if match is None:
            raise DatabaseError(f"{path}: expected a migration named like 001_name.sql")
        found.append(Migration(int(match.group(1)), match.group(2), path))
    versions = [m.version for m in found]
    if len(versions) != len(set(versions)):
        raise DatabaseError(f"{folder}: two migrations share a version number")
    return found


def _lock_key(schema: str) -> int:
    return zlib.crc32(f"butler-migrate:{schema}".encode()) - 2**31


async def migrate(db: Database, folder: Traversable | None = None) -> list[Migration]:
    """Apply every migration not yet recorded; return the ones applied now."""
    pending = discover(folder)
    applied_now: list[Migration] = []
    async with db.pool.acquire() as conn:
        if await _all_applied(conn, pending):
            return applied_now  # every start but the first: no lock, three round trips fewer
        await conn.execute("SELECT pg_advisory_lock($1)", _lock_key(db.schema))
        try:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS butler_migrations ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["version"] for r in await conn.fetch("SELECT version FROM butler_migrations")}
            for migration in pending:
                if migration.version in done:
                    continue
                await _apply(conn, migration)
                applied_now.append(migration)
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", _lock_key(db.schema))
    return applied_now


async def applied_count(db: Database) -> int:
    """How many migrations the butler's schema has recorded."""
    return int(await db.fetchval("SELECT count(*) FROM butler_migrations"))


async def level(db: Database) -> int:
    """The newest migration the butler's schema has recorded (0 for none)."""
    try:
        return int(await db.fetchval("SELECT coalesce(max(version), 0) FROM butler_migrations"))
    except asyncpg.UndefinedTableError:
        return 0


def known() -> int:
    """The newest migration this butler knows."""
    return max((m.version for m in discover()), default=0)


async def _all_applied(conn: asyncpg.Connection, pending: list[Migration]) -> bool:
    """Whether every migration is recorded already (none is ever taken back)."""
    try:
        done = {r["version"] for r in await conn.fetch("SELECT version FROM butler_migrations")}
    except asyncpg.UndefinedTableError:
        return False  # a new schema
    return all(m.version in done for m in pending)


async def _apply(conn: asyncpg.Connection, migration: Migration) -> None:
    """Run one migration and record it, all or nothing."""
    try:
        async with conn.transaction():
            await conn.execute(migration.path.read_text(encoding="utf-8"))
            await conn.execute(
                "INSERT INTO butler_migrations (version, name) VALUES ($1, $2)",
                migration.version,
                migration.name,
            )
    except asyncpg.PostgresError as exc:
        raise DatabaseError(
            f"{migration.path}: migration failed, none of it applied: {exc}"
        ) from None
