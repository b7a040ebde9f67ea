"""`butler workers` and `butler worker --capacity` on the command line: what they list from
the workers' rows, and the one line each mistake gets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import asyncpg

from butler.store.db import Database
from butler.store.migrations import known, migrate
from butler.store.session_jobs import PROTOCOL
from butler.store.workers import WorkerRow, WorkerRows
from tests.helpers import REPO, free_port, write_butler


def butler(*args: str, cwd=REPO, env: dict[str, str] | None = None):
    base = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "butler.cli", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _row(name: str, capacity: int, beat_s: float = 2.0) -> WorkerRow:
    return WorkerRow(
        name, "box-" + name, ["alpha"], capacity, uuid.uuid4(), beat_s, "1.0", PROTOCOL, known()
    )


async def test_butler_workers_lists_live_and_lost_workers_and_forgets_one_that_left(
    db, schema_name, pg_dsn, tmp_path
):
    rows = WorkerRows(db)
    # a beats hourly: still up however long the CLI below takes to start (with 2 s beats
    # it was lost 6 s after it registered, and under the suite's load the CLI took longer).
    await rows.register(_row("a:1", 2, beat_s=3600))
    await rows.register(_row("b:2", 4))
    await rows.register(_row("c:3", 8))
    # b missed three beats of 2 s; c stopped cleanly.
    await db.execute("UPDATE workers SET heartbeat_at = now() - interval '7 s' WHERE name = 'b:2'")
    await rows.leave("c:3")
    write_butler(tmp_path / "roster", "alpha", port=free_port(), schema=schema_name)

    done = butler("workers", "-r", str(tmp_path / "roster"), "--database-url", pg_dsn, "--json")
    assert done.returncode == 0, done.stderr
    found = {w["name"]: w for w in json.loads(done.stdout)}
    assert set(found) == {"a:1", "b:2"}
    assert (found["a:1"]["status"], found["a:1"]["host"], found["a:1"]["capacity"]) == (
        "up",
        "box-a:1",
        2,
    )
    assert found["b:2"]["status"] == "lost" and found["b:2"]["silent_s"] >= 7
    assert found["a:1"]["running"] == found["b:2"]["running"] == 0
    assert found["a:1"]["butlers"] == ["alpha"]
    assert await rows.live() == 1

    table = butler("workers", "-r", str(tmp_path / "roster"), "--database-url", pg_dsn)
    assert "a:1" in table.stdout and "lost" in table.stdout, table.stdout


async def test_butler_workers_shows_a_worker_of_an_older_version_as_incompatible(
    db, schema_name, pg_dsn, tmp_path
):
    rows = WorkerRows(db)
    await rows.register(_row("new:1", 2, beat_s=3600))
    # What a worker from before migration 018 writes: its row, and no version.
    await db.execute(
        "INSERT INTO workers (name, host, butlers, capacity, queue_manager_id, beat_s)"
        " VALUES ('old:2', 'box-old', '{alpha}', 2, $1, 3600)",
        uuid.uuid4(),
    )
    write_butler(tmp_path / "roster", "alpha", port=free_port(), schema=schema_name)
    done = butler("workers", "-r", str(tmp_path / "roster"), "--database-url", pg_dsn, "--json")
    assert done.returncode == 0, done.stderr
    found = {w["name"]: w for w in json.loads(done.stdout)}
    assert found["old:2"]["status"] == "incompatible" and found["old:2"]["protocol"] is None
    assert (found["new:1"]["status"], found["new:1"]["protocol"]) == ("up", PROTOCOL)
    assert await rows.live() == 1
    assert await rows.strangers() == ["old:2 (a butler from before hand-over protocols)"]
    table = butler("workers", "-r", str(tmp_path / "roster"), "--database-url", pg_dsn)
    assert "incompatible" in table.stdout, table.stdout


async def test_butler_workers_on_a_butler_that_never_ran_lists_none_and_creates_nothing(
    pg_dsn, tmp_path
):
    schema = f"t_{uuid.uuid4().hex[:12]}"
    write_butler(tmp_path / "roster", "alpha", port=free_port(), schema=schema)
    done = butler("workers", "-r", str(tmp_path / "roster"), "--database-url", pg_dsn)
    assert done.returncode == 0, done.stderr
    assert "no workers" in done.stdout
    conn = await asyncpg.connect(pg_dsn)
    try:
        assert await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema) is None
    finally:
        await conn.close()


def test_butler_workers_without_a_database_names_the_option_in_one_line(tmp_path):
    write_butler(tmp_path / "roster", "alpha", port=free_port())
    done = butler("workers", "-r", str(tmp_path / "roster"))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--database-url" in lines[0], done.stderr


def test_butler_workers_with_an_unreachable_database_says_where_it_looked(tmp_path):
    write_butler(tmp_path / "roster", "alpha", port=free_port())
    url = "postgresql://postgres@127.0.0.1:1/none"
    done = butler("workers", "-r", str(tmp_path / "roster"), "--database-url", url)
    assert done.returncode != 0
    assert "cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:1/none" in done.stderr


def test_a_worker_capacity_below_two_is_refused_with_the_reason(tmp_path):
    write_butler(tmp_path / "roster", "alpha", port=free_port())
    done = butler(
        "worker", "-r", str(tmp_path / "roster"), "--capacity", "1", "--database-url", "x://y"
    )
    assert done.returncode == 2
    assert "--capacity: expected 2 to 256" in done.stderr


async def test_a_worker_serving_two_butlers_is_one_line_naming_both(pg_dsn, tmp_path):
    schemas = [f"t_{uuid.uuid4().hex[:12]}" for _ in range(2)]
    manager = uuid.uuid4()
    try:
        for n, schema in enumerate(schemas):
            db = Database(pg_dsn, schema)
            await db.connect()
            try:
                await migrate(db)
                row = WorkerRow(
                    "both:7", "box", ["one", "two"], 2, manager, 2.0, "1.0", PROTOCOL, known()
                )
                await WorkerRows(db).register(row)
            finally:
                await db.close()
            write_butler(tmp_path / "roster", ["one", "two"][n], port=free_port(), schema=schema)
        done = butler("workers", "-r", str(tmp_path / "roster"), "--database-url", pg_dsn, "--json")
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        assert [(w["name"], w["butlers"]) for w in found] == [("both:7", ["one", "two"])]
    finally:
        conn = await asyncpg.connect(pg_dsn)
        try:
            for schema in schemas:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            await conn.close()
