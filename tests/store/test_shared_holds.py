"""A roster's holds on its schemas share one connection, and still keep a second daemon off
each; a large roster's pools share a cap on their connections (butler/store/budget.py)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import psutil
import pytest

from butler.store.budget import Budget
from butler.store.db import Database, quote_ident
from butler.store.install import Install, InstallTaken, Leases, check_install, hold
from butler.store.migrations import migrate
from tests.conftest import TEST_DSN

pytestmark = pytest.mark.slow  # real PostgreSQL, many schemas


@pytest.fixture
async def schemas(tmp_path: Path) -> AsyncIterator[list[str]]:
    """Three schemas made and claimed for butlers named after them, dropped after."""
    names = [f"t_{uuid.uuid4().hex[:8]}_{i}" for i in range(3)]
    for name in names:
        db = Database(TEST_DSN, name)
        await db.connect()
        await migrate(db)
        await check_install(db, Install(name, tmp_path / name, chosen_schema=True))
        await db.close()
    yield names
    conn = await asyncpg.connect(TEST_DSN)
    try:
        for name in names:
            await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(name)} CASCADE")
    finally:
        await conn.close()


async def locks_of(pid: int) -> int:
    """Advisory locks the server backend ``pid`` holds."""
    conn = await asyncpg.connect(TEST_DSN)
    try:
        return await conn.fetchval(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1", pid
        )
    finally:
        await conn.close()


async def test_a_rosters_schemas_are_held_on_one_connection_and_a_second_daemon_is_refused(
    schemas,
):
    leases = Leases(TEST_DSN)
    try:
        for name in schemas:
            await leases.hold(Database(TEST_DSN, name), name)
        assert leases.conn is not None
        assert await locks_of(leases.conn.get_server_pid()) == 3
        with pytest.raises(InstallTaken, match=f"already served by pid {os.getpid()}"):
            await hold(Database(TEST_DSN, schemas[1]), schemas[1])  # another daemon
        # Nor may the roster itself hold one schema twice (the lock is re-entrant).
        with pytest.raises(InstallTaken, match="already served by"):
            await leases.hold(Database(TEST_DSN, schemas[2]), "again")
    finally:
        await leases.release()
    later = await hold(Database(TEST_DSN, schemas[1]), schemas[1])  # released: free again
    await later.release()


async def test_locks_taken_before_the_holding_connection_was_lost_are_taken_again_with_the_next(
    schemas,
):
    """A roster's start takes its butlers' schemas one after another; if the connection
    holding the first ones is lost meanwhile (a PostgreSQL restart), taking the next must
    take those again too, so a second daemon is still refused on every one."""
    leases = Leases(TEST_DSN)
    try:
        for name in schemas[:2]:
            await leases.hold(Database(TEST_DSN, name), name)
        assert leases.conn is not None
        leases.conn.terminate()  # the connection is gone, and its locks with it
        await leases.hold(Database(TEST_DSN, schemas[2]), schemas[2])
        assert await locks_of(leases.conn.get_server_pid()) == 3
        for name in schemas:
            with pytest.raises(InstallTaken, match="already served by"):
                await hold(Database(TEST_DSN, name), name)  # another daemon
    finally:
        await leases.release()


def sockets_to_server() -> int:
    """This process's TCP connections to the test server's port."""
    port = urlsplit(TEST_DSN).port or 5432
    found = psutil.Process().net_connections("tcp")
    return sum(1 for c in found if c.raddr and c.raddr.port == port and c.status == "ESTABLISHED")


async def test_thirty_pools_sharing_a_budget_of_five_answer_every_query_on_five_connections(
    tmp_path,
):
    names = [f"t_{uuid.uuid4().hex[:8]}_{i}" for i in range(30)]
    budget = Budget(limit=5)
    pools = [Database(TEST_DSN, name, min_size=0, budget=budget) for name in names]
    before = sockets_to_server()
    most = 0

    async def sample() -> None:
        nonlocal most
        while True:
            most = max(most, sockets_to_server() - before)
            await asyncio.sleep(0.005)

    sampler = asyncio.create_task(sample())
    try:
        for db in pools:
            await db.connect()
        # Every pool at once, twice, each query holding its connection a moment.
        for _ in range(2):
            answers = await asyncio.gather(
                *(db.fetchval("SELECT current_schema() FROM pg_sleep(0.02)") for db in pools)
            )
            assert answers == names  # each query ran in its own butler's schema
    finally:
        sampler.cancel()
        for db in pools:
            await db.close()
        conn = await asyncpg.connect(TEST_DSN)
        try:
            for name in names:
                await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(name)} CASCADE")
        finally:
            await conn.close()
    assert budget.peak <= 5
    # Without the budget every pool keeps its own: 30. A connection closed to make room
    # may linger a moment beside its replacement (the server sees its end shortly after).
    assert most <= 10
