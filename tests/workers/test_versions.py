"""Daemon and worker of different versions: each says so in one line, and a session is
refused at once rather than waiting out its bound for a worker that never takes it (an
older worker was accepted with no check: its runtimes never reached the butler and its
sessions ended at their timeout)."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import butler_client, free_port
from tests.workers.machines import machine
from tests.workers.tester import LinkDaemon, link_butler, link_worker, output_of

pytestmark = pytest.mark.slow


async def _execute(dsn: str, sql: str, *args: object) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(sql, *args)
    finally:
        await conn.close()


async def test_a_session_only_an_older_worker_could_take_is_refused_at_once_in_one_line(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    try:
        port = free_port()
        folder = link_butler(tmp_path / "roster", "127.0.0.1", port)
        daemon = LinkDaemon(folder, port=port, database_url=dsn, host="127.0.0.1").start()
        try:
            # What a worker of the version before this check writes when it starts.
            await _execute(
                dsn,
                "INSERT INTO workers_test.workers"
                " (name, host, butlers, capacity, queue_manager_id, beat_s)"
                " VALUES ('old:1', 'old-box', '{tester}', 2, $1, 3600)",
                uuid.uuid4(),
            )
            async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                result = await asyncio.wait_for(
                    client.call_tool("trigger", {"prompt": "hello"}, raise_on_error=False), 60
                )
            logs = daemon.logs()
        finally:
            daemon.stop()
        answer = result.structured_content or {}
        said = answer.get("error") or result.content[0].text
        assert not answer.get("success"), answer
        assert "old:1 (a butler from before hand-over protocols)" in said, said
        assert "Upgrade them" in said
        lines = [line for line in logs.splitlines() if "no worker that speaks" in line]
        assert len(lines) == 1, logs
    finally:
        await server.stop()


async def test_a_worker_refuses_a_butler_whose_database_is_at_another_migration_in_one_line(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    try:
        with machine() as place:
            port = free_port()
            folder = link_butler(tmp_path / "roster", place.peer, port)
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            try:
                # A newer daemon migrated the database past what this worker knows.
                await _execute(
                    dsn,
                    "INSERT INTO workers_test.butler_migrations (version, name)"
                    " VALUES (999, 'from_the_future')",
                )
                worker = link_worker(place, folder.parent, dsn, tmp_path / "data")
                output = output_of(worker, tmp_path / "data")
            finally:
                daemon.stop()
        assert worker.returncode == 1, output
        lines = [line for line in output.splitlines() if "its database is at migration" in line]
        assert len(lines) == 1, output
        assert "999" in lines[0] and "upgrade this worker" in lines[0], lines[0]
        assert "takes none of its sessions" in lines[0]
    finally:
        await server.stop()
