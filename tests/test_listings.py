"""Session listings: keyset pages, builder rows by type, and what changed since a cursor."""

from __future__ import annotations

import asyncio
import urllib.parse
import uuid
from datetime import timedelta

import asyncpg
import pytest

from butler.store.db import Database
from butler.store.sessions import NewSession, SessionStore, parse_position, position
from tests.helpers import DaemonProcess, free_port, get_json


async def fill(db: Database, count: int, type_: str = "trigger") -> None:
    # Rows as a long history leaves them: many sharing a created_at, as a batch does.
    await db.execute(
        "INSERT INTO sessions (id, prompt, trigger_source, runtime, status, type, created_at)"
        " SELECT gen_random_uuid(), 'p' || g, 'external', 'claude-code', 'succeeded', $2,"
        " timestamptz '2026-01-01' - (g / 3 || ' seconds')::interval"
        " FROM generate_series(1, $1) g",
        count,
        type_,
    )


async def test_pages_by_position_visit_every_row_once(db: Database) -> None:
    store = SessionStore(db)
    await fill(db, 25)
    seen: list[str] = []
    page = await store.list(limit=7)
    while page:
        seen += [row["id"] for row in page]
        page = await store.list(limit=7, before=parse_position("before", position(page[-1])))
    assert len(seen) == len(set(seen)) == 25
    assert seen == [row["id"] for row in await store.list(limit=100)]


async def test_each_listing_reads_an_index_not_the_table(db: Database) -> None:
    await fill(db, 20_000)
    await db.execute("ANALYZE sessions")
    queries = {
        "newest": "SELECT * FROM sessions ORDER BY created_at DESC, id DESC LIMIT 200",
        "status": "SELECT * FROM sessions WHERE status = 'failed'"
        " ORDER BY created_at DESC, id DESC LIMIT 20",
        "builders": "SELECT * FROM sessions WHERE type = ANY(ARRAY['spec','task'])"
        " ORDER BY created_at DESC, id DESC",
        "changed": "SELECT * FROM sessions WHERE updated_at > now() OR status = 'running'"
        " ORDER BY created_at DESC, id DESC LIMIT 200",
    }
    for name, query in queries.items():
        plan = "\n".join(r[0] for r in await db.fetch(f"EXPLAIN {query}"))
        assert "Seq Scan" not in plan, f"{name}:\n{plan}"


async def test_builder_rows_come_by_type_alone(db: Database) -> None:
    store = SessionStore(db)
    await fill(db, 500)
    await fill(db, 3, "task")
    rows = await store.of_types(["spec", "task"])
    assert [r["type"] for r in rows] == ["task"] * 3


async def test_changed_since_gives_updated_and_running_rows_only(db: Database) -> None:
    store = SessionStore(db)
    await fill(db, 50)
    cursor = await store.cursor()
    assert await store.changed_since(cursor, 200) == []
    new = NewSession(prompt="now", trigger_source="external", runtime="claude-code")
    await store.create(new, status="running")
    old = (await store.list(limit=1, status="succeeded"))[0]
    await store.update_metadata(uuid.UUID(old["id"]), {"seen": True})
    changed = {r["id"] for r in await store.changed_since(cursor, 200)}
    assert changed == {str(new.id), old["id"]}
    later = await store.cursor()
    assert later > cursor
    # The running row keeps coming: its duration changes with no update.
    assert {r["id"] for r in await store.changed_since(later + timedelta(0), 200)} >= {str(new.id)}


def test_a_bad_position_is_one_line_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^before: 'yesterday' is not a session's position"):
        parse_position("before", "yesterday")


def test_the_live_list_fetches_only_what_changed(butler_dir, pg_dsn, schema_name) -> None:
    port = free_port()
    with DaemonProcess(butler_dir, port=port, database_url=pg_dsn) as daemon:
        api = f"{daemon.url}/api/sessions"
        table = f'"{schema_name}".sessions'
        # Written a while ago: older than the overlap a cursor allows for late commits.
        insert = f"INSERT INTO {table} (id, prompt, trigger_source, runtime, updated_at)"
        values = f" VALUES ('{ROW}', 'hello', 'external', 'x', now() - interval '1 hour')"
        asyncio.run(_sql(pg_dsn, insert + values))
        status, first = get_json(api)
        assert status == 200 and ROW in first["html"] and first["cursor"]
        since = f"{api}?since={urllib.parse.quote(first['cursor'])}"
        assert get_json(since)[1]["rows"] == {}  # nothing changed: nothing sent
        asyncio.run(_sql(pg_dsn, f"UPDATE {table} SET status = 'failed'"))
        rows = get_json(since)[1]["rows"]
        assert list(rows) == [ROW] and 'data-status="failed"' in rows[ROW]
        status, refused = get_json(f"{api}?since=soon")
        assert status == 400 and refused["error"].startswith("since: 'soon' is not a timestamp")


ROW = "00000000-0000-4000-8000-000000000001"


async def _sql(dsn: str, statement: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()
