"""Migrations against a real PostgreSQL: once each, all or nothing, safe in a race."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from butler.errors import DatabaseError
from butler.store.db import Database
from butler.store.migrations import discover, migrate
from butler.store.state import StateStore
from tests.helpers import REPO, free_port, write_butler

pytestmark = pytest.mark.slow


async def tables(db: Database) -> list[str]:
    rows = await db.fetch(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1"
        " ORDER BY table_name",
        db.schema,
    )
    return [r["table_name"] for r in rows]


async def test_a_fresh_schema_gets_the_sessions_and_state_tables(pg_dsn, schema_name):
    db = Database(pg_dsn, schema_name)
    await db.connect()
    try:
        applied = await migrate(db)
        assert [m.version for m in applied] == [m.version for m in discover()]
        assert {"butler_migrations", "sessions", "state"} <= set(await tables(db))
        columns = {
            r["column_name"]
            for r in await db.fetch(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = $1 AND table_name = 'sessions'",
                schema_name,
            )
        }
        assert {
            "id",
            "prompt",
            "trigger_source",
            "status",
            "tool_calls",
            "cost_usd",
            "trace_id",
            "parent_session_id",
            "completed_at",
        } <= columns
    finally:
        await db.close()


async def test_migrating_twice_changes_nothing(db):
    """The ``db`` fixture migrated once already; a second run applies none and loses nothing."""
    await StateStore(db).set("kept", {"n": 1})
    before = await tables(db)
    recorded = await db.fetch("SELECT version, name, applied_at FROM butler_migrations")
    assert await migrate(db) == []
    assert await tables(db) == before
    assert await db.fetch("SELECT version, name, applied_at FROM butler_migrations") == recorded
    assert len(recorded) == len(discover())
    assert await StateStore(db).get("kept") == {"n": 1}


async def test_two_daemons_migrating_at_once_apply_each_migration_exactly_once(pg_dsn, schema_name):
    first, second = Database(pg_dsn, schema_name), Database(pg_dsn, schema_name)
    await asyncio.gather(first.connect(), second.connect())
    try:
        applied = await asyncio.gather(migrate(first), migrate(second))
        versions = sorted(m.version for run in applied for m in run)
        assert versions == [m.version for m in discover()]
        count = await first.fetchval("SELECT count(*) FROM butler_migrations")
        assert count == len(discover())
    finally:
        await asyncio.gather(first.close(), second.close())


async def test_a_failing_migration_is_rolled_back_and_named(db, tmp_path):
    folder = tmp_path / "migrations"
    folder.mkdir()
    for migration in discover():
        (folder / migration.path.name).write_text(migration.path.read_text())
    bad = folder / "900_notes.sql"
    bad.write_text("CREATE TABLE notes (body text);\nSELECT no_such_column FROM notes;\n")
    with pytest.raises(DatabaseError, match=r"900_notes\.sql: migration failed, none of it"):
        await migrate(db, folder)
    assert "notes" not in await tables(db)
    assert await db.fetchval("SELECT count(*) FROM butler_migrations WHERE version = 900") == 0

    bad.write_text("CREATE TABLE notes (body text);\n")
    assert [m.name for m in await migrate(db, folder)] == ["notes"]
    assert "notes" in await tables(db)


def db_migrate(folder: Path, dsn: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    argv = [sys.executable, "-m", "butler.cli", "db", "migrate", "--config", str(folder)]
    return subprocess.run(
        [*argv, "--database-url", dsn],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


def test_butler_db_migrate_prints_what_it_applied_then_says_up_to_date(roster, schema_name, pg_dsn):
    folder = write_butler(roster, "tester", port=free_port(), schema=schema_name)
    names = [m.path.name for m in discover()]

    first = db_migrate(folder, pg_dsn)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        *(f"applied {name}" for name in names),
        f"schema {schema_name}: {len(names)} applied now, {len(names)} migrations in all",
    ]

    second = db_migrate(folder, pg_dsn)
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [
        f"schema {schema_name}: up to date, {len(names)} migrations in all"
    ]

    async def count() -> int:
        conn = await asyncpg.connect(pg_dsn)
        try:
            return await conn.fetchval(f"SELECT count(*) FROM {schema_name}.butler_migrations")
        finally:
            await conn.close()

    assert asyncio.run(count()) == len(names)


async def test_two_butlers_on_one_server_cannot_see_each_others_state(pg_dsn, schema_name):
    other_schema = f"{schema_name}_b"
    alpha, beta = Database(pg_dsn, schema_name), Database(pg_dsn, other_schema)
    try:
        for db in (alpha, beta):
            await db.connect()
            await migrate(db)
        await StateStore(alpha).set("diary/today", "alpha's secret")
        await StateStore(beta).set("diary/today", "beta's note")
        assert await StateStore(alpha).get("diary/today") == "alpha's secret"
        assert await StateStore(beta).get("diary/today") == "beta's note"
        await StateStore(beta).delete("diary/today")
        assert await StateStore(beta).list("diary/") == {}
        assert await StateStore(alpha).list("diary/") == {"diary/today": "alpha's secret"}
    finally:
        await asyncio.gather(alpha.close(), beta.close())
        conn = await asyncpg.connect(pg_dsn)
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {other_schema} CASCADE")
        finally:
            await conn.close()
