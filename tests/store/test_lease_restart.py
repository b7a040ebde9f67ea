"""A serving daemon's hold on its schema outlives a PostgreSQL restart, or it stops saying why.

The advisory lock ends with its connection, and a restart ends every
connection: the daemon must take it again, or stop if another daemon took it
meanwhile. The server here is the test's own embedded PostgreSQL
(tests/outage.py), stopped and started again under the holder.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from butler.store.db import Database
from butler.store.embedded import EmbeddedPostgres
from butler.store.install import Install, InstallTaken, LeaseLost, Leases, check_install, hold
from butler.store.migrations import migrate
from tests.helpers import REPO, eventually, free_port, get_json, write_butler
from tests.outage import own_postgres

__all__ = ["own_postgres"]

pytestmark = pytest.mark.slow  # a PostgreSQL of the test's own, stopped and started

SCHEMA = "lease_restart"


async def claimed(dsn: str, folder: Path) -> Database:
    """The schema made and claimed for a butler ``keeper`` in ``folder``."""
    db = Database(dsn, SCHEMA)
    await db.connect()
    await migrate(db)
    await check_install(db, Install("keeper", folder, chosen_schema=True))
    await db.close()
    return Database(dsn, SCHEMA)  # hold() needs only where it is


async def restart(pgdata: Path, server: EmbeddedPostgres) -> EmbeddedPostgres:
    await server.stop()
    again = EmbeddedPostgres(pgdata)
    await again.start()
    return again


async def advisory_locks(dsn: str) -> int:
    """How many advisory locks the server holds now (0 while it is away)."""
    try:
        conn = await asyncpg.connect(dsn, timeout=5)
    except (OSError, asyncpg.PostgresError):
        return 0
    try:
        return await conn.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
    finally:
        await conn.close()


async def holder(dsn: str) -> int | None:
    """The pid the schema's claim names as holding it now (None before, or while away)."""
    try:
        conn = await asyncpg.connect(dsn, timeout=5)
    except (OSError, asyncpg.PostgresError):
        return None
    try:
        return await conn.fetchval(f"SELECT holder_pid FROM {SCHEMA}.butler_install")
    except asyncpg.PostgresError:
        return None  # not made yet
    finally:
        await conn.close()


def _serving(port: int) -> bool:
    try:
        return get_json(f"http://127.0.0.1:{port}/health", token=None)[0] == 200
    except OSError:
        return False


async def test_the_daemon_takes_its_schema_again_when_postgresql_comes_back(own_postgres, tmp_path):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    db = await claimed(dsn, tmp_path)
    lease = await hold(db, "keeper")
    keeping = asyncio.create_task(lease.keep(every=0.1))
    try:
        server = await restart(own_postgres, server)

        async def held_again() -> bool:
            if keeping.done():  # the keeper gave up: say why
                raise AssertionError(f"the lease keeper ended: {keeping.exception()!r}")
            return not lease.conn.is_closed() and await advisory_locks(dsn) > 0

        await eventually(held_again, timeout=60)
        # A second daemon started now is refused, naming the first.
        with pytest.raises(InstallTaken, match=f"already served by pid {os.getpid()}"):
            await hold(Database(dsn, SCHEMA), "keeper")
        assert not keeping.done()
    finally:
        keeping.cancel()
        await lease.release()
        await server.stop()


async def test_a_rosters_schemas_are_all_held_again_on_one_connection_after_a_restart(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    names = [f"{SCHEMA}_{i}" for i in range(3)]
    leases = Leases(dsn)
    for name in names:
        db = Database(dsn, name)
        await db.connect()
        await migrate(db)
        await check_install(db, Install(name, tmp_path / name, chosen_schema=True))
        await db.close()
        await leases.hold(Database(dsn, name), name)
    keeping = asyncio.create_task(leases.keep(every=0.1))
    try:
        server = await restart(own_postgres, server)

        async def held_again() -> bool:
            if keeping.done():
                raise AssertionError(f"the lease keeper ended: {keeping.exception()!r}")
            # The new connection is the leases' once it holds all three (and noted them).
            alive = leases.conn is not None and not leases.conn.is_closed()
            return alive and await advisory_locks(dsn) == 3

        await eventually(held_again, timeout=60)
        for name in names:  # each still keeps a second daemon off
            with pytest.raises(InstallTaken, match=f"already served by pid {os.getpid()}"):
                await hold(Database(dsn, name), name)
    finally:
        keeping.cancel()
        await leases.release()
        await server.stop()


async def test_a_daemon_whose_schema_was_taken_meanwhile_is_told_to_stop(own_postgres, tmp_path):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    db = await claimed(dsn, tmp_path)
    lease = await hold(db, "keeper")
    server = await restart(own_postgres, server)
    other = await hold(Database(dsn, SCHEMA), "keeper")  # first in after the restart
    try:
        taken = "another daemon took it meanwhile: keeper: already served by"
        with pytest.raises(LeaseLost, match=taken):
            await asyncio.wait_for(lease.keep(every=0.05), timeout=60)
    finally:
        await other.release()
        await lease.release()
        await server.stop()


async def test_butler_run_stops_with_one_line_when_its_schema_is_taken_during_a_restart(
    own_postgres, roster
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    port = free_port()
    folder = write_butler(roster, "keeper", port=port, schema=SCHEMA)
    env = {**os.environ, "DATABASE_URL": dsn}
    log = roster / "daemon.log"
    argv = [sys.executable, "-m", "butler.cli", "run", "-c", str(folder), "--log-format", "text"]
    with log.open("w") as out:
        daemon = await asyncio.to_thread(
            subprocess.Popen, argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    other = None
    try:
        await eventually(lambda: holder(dsn), timeout=120)
        # Serving, not only holding: a restart during the start is another case (the
        # start fails as a start does), and on a loaded machine the lock comes seconds
        # before /health.
        await eventually(lambda: _serving(port), timeout=120)
        await server.stop()
        server = EmbeddedPostgres(own_postgres)
        await server.start()
        other = await hold(Database(dsn, SCHEMA), "keeper")  # before the daemon is back in
        code = await asyncio.to_thread(daemon.wait, 120)
        stderr = log.read_text()
        assert code == 1, stderr
        assert f"keeper: the connection holding schema '{SCHEMA}' was lost" in stderr, stderr
        assert "another daemon took it meanwhile" in stderr
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGKILL)
            daemon.wait()
        if other is not None:
            await other.release()
        await server.stop()
