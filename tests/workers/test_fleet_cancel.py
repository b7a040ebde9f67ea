"""A session handed to workers and cancelled before any worker picked it (the daemon
drained, or no worker came in time) is taken back from the queue: no worker that
starts later runs a session whose row already says it ended. One cancelled while a
worker runs it has its runtime ended there."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import asyncpg
import psutil
import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import DaemonProcess, butler_client, eventually, free_port, write_butler
from tests.workers.fleet import stop
from tests.workers.machines import machine
from tests.workers.tester import LinkDaemon, link_butler, link_worker


async def _one(dsn: str, query: str):
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchrow(query)
    finally:
        await conn.close()


async def test_a_queued_remote_session_cancelled_by_a_drain_is_withdrawn_from_the_queue(
    pg_dsn, schema_name, tmp_path
):
    port = free_port()
    runtime = {"type": "command", "command": ["echo", "hi"], "workers": "remote"}
    folder = write_butler(
        tmp_path / "roster",
        "nobody",
        port=port,
        schema=schema_name,
        runtime=runtime,
    )
    toml = folder / "butler.toml"
    toml.write_text(toml.read_text().replace("port = ", "shutdown_timeout_s = 1\nport = ", 1))
    daemon = DaemonProcess(folder, port=port, database_url=pg_dsn).start()

    async def trigger() -> None:
        with contextlib.suppress(Exception):  # its daemon stops under it
            async with butler_client(f"{daemon.url}/mcp", timeout=60) as client:
                await client.call_tool("trigger", {"prompt": "never picked"})

    call = asyncio.create_task(trigger())
    try:
        await eventually(lambda: _one(pg_dsn, f"SELECT id FROM {schema_name}.pgqueuer"), 60)
    finally:
        daemon.stop()  # no worker ever ran: the drain cancels the session after 1 s
        await call
    row = await _one(pg_dsn, f"SELECT status, error FROM {schema_name}.sessions")
    assert row["status"] == "cancelled", dict(row)
    assert await _one(pg_dsn, f"SELECT * FROM {schema_name}.pgqueuer") is None
    logged = await _one(
        pg_dsn, f"SELECT array_agg(status::text ORDER BY id) AS s FROM {schema_name}.pgqueuer_log"
    )
    assert logged["s"] == ["queued", "canceled"]


@pytest.mark.slow
async def test_a_session_cancelled_while_a_worker_runs_it_has_its_runtime_ended_on_the_worker(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    marker = "613.5"  # this test's runtime, found by its argv
    try:
        with machine() as place:
            port = free_port()
            folder = link_butler(tmp_path / "roster", place.peer, port, ["sleep", marker])
            toml = folder / "butler.toml"
            text = toml.read_text().replace("port = ", "shutdown_timeout_s = 1\nport = ", 1)
            # The session's own limit far past the test: only the cancel may end it.
            toml.write_text(text.replace("timeout_s = 60", "timeout_s = 900"))
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            try:
                worker = link_worker(place, folder.parent, dsn, tmp_path / "data")

                async def trigger() -> None:
                    with contextlib.suppress(Exception):  # its daemon stops under it
                        async with butler_client(f"{daemon.url}/mcp", timeout=60) as client:
                            await client.call_tool("trigger", {"prompt": "long"})

                call = asyncio.create_task(trigger())
                await eventually(lambda: _runtimes(marker), timeout=60, interval=0.2)
                daemon.stop()  # the drain cancels the session after 1 s
                await call
                row = await _one(dsn, "SELECT status FROM workers_test.sessions")
                assert row["status"] == "cancelled", dict(row)
                # The worker ends the runtime, and hands nothing back: nobody waits for it.
                await eventually(lambda: not _runtimes(marker), timeout=60, interval=0.2)
                running = tmp_path / "data" / "workers" / "running"
                await eventually(lambda: not list(running.glob("*")), timeout=30)
                assert await _one(dsn, "SELECT * FROM workers_test.session_results") is None
                assert worker.poll() is None  # and it goes on serving
            finally:
                for proc in _runtimes(marker):
                    proc.kill()
                stop(worker)
                daemon.stop()
    finally:
        await server.stop()


def _runtimes(marker: str) -> list[psutil.Process]:
    """This test's runtime: ``sleep`` found on the PATH (its argv names the whole path)."""
    return [
        p
        for p in psutil.process_iter(["cmdline"])
        if (p.info["cmdline"] or [""])[-1] == marker and Path(p.info["cmdline"][0]).name == "sleep"
    ]
