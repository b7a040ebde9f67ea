"""A query through the daemon's pool is one round trip: the pool sends nothing after it."""

from __future__ import annotations

import asyncpg

from tests.conftest import TEST_DSN


async def last_query_of(backend: int) -> str:
    """What the backend ``backend`` ran last, seen from another connection."""
    conn = await asyncpg.connect(TEST_DSN)
    try:
        return await conn.fetchval("SELECT query FROM pg_stat_activity WHERE pid = $1", backend)
    finally:
        await conn.close()


async def test_a_pooled_statement_is_not_followed_by_a_reset_round_trip(db):
    """asyncpg's default reset doubled the round trips of every session's writes."""
    backend = await db.fetchval("SELECT pg_backend_pid()")
    # One connection in the pool at first: the next statement runs on the same backend.
    await db.execute("SELECT 1 AS after_the_write")
    assert backend == await db.fetchval("SELECT pg_backend_pid()")
    assert await last_query_of(backend) == "SELECT pg_backend_pid()"


async def test_a_transaction_left_open_is_rolled_back_when_its_connection_returns(db):
    await db.execute("CREATE TABLE kept (n int)")
    async with db.pool.acquire() as conn:
        await conn.execute("BEGIN")
        await conn.execute("INSERT INTO kept VALUES (1)")
    assert await db.fetchval("SELECT count(*) FROM kept") == 0
    async with db.pool.acquire() as conn:
        assert not conn.is_in_transaction()
