"""A large roster fits a PostgreSQL server's connections: ``butler up`` of 25 butlers holds
one connection for every schema's lock and at most ``ROSTER_CONNECTIONS`` for its pools,
and every butler still answers calls that use its database."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import psutil
import pytest

from butler.roster_open import WARM_UP_TO
from butler.store.budget import ROSTER_CONNECTIONS
from butler.store.db import quote_ident
from tests.conftest import TEST_DSN
from tests.helpers import free_port, wait_until, write_butler
from tests.rosters import call, healthy, roster_up

pytestmark = pytest.mark.slow  # 25 butlers in a real process

BUTLERS = 25
assert BUTLERS > WARM_UP_TO  # the pools share the roster's cap


@pytest.fixture
def many(roster: Path) -> Iterator[list[int]]:
    """A roster of 25 butlers, each its own schema (dropped after); their ports."""
    prefix = f"t_{uuid.uuid4().hex[:8]}"
    ports: list[int] = []
    while len(ports) < BUTLERS:  # a port just freed may be handed out again
        port = free_port()
        if port not in ports:
            ports.append(port)
    for i, port in enumerate(ports):
        write_butler(roster, f"b{i:02d}", port=port, schema=f"{prefix}_{i:02d}")
    yield ports

    async def drop() -> None:
        conn = await asyncpg.connect(TEST_DSN)
        try:
            for i in range(BUTLERS):
                await conn.execute(
                    f"DROP SCHEMA IF EXISTS {quote_ident(f'{prefix}_{i:02d}')} CASCADE"
                )
        finally:
            await conn.close()

    asyncio.run(drop())


def database_sockets(pid: int) -> int:
    port = urlsplit(TEST_DSN).port or 5432
    found = psutil.Process(pid).net_connections("tcp")
    return sum(1 for c in found if c.raddr and c.raddr.port == port and c.status == "ESTABLISHED")


def test_a_roster_of_25_butlers_holds_at_most_21_connections_and_every_butler_answers(
    roster, many, tmp_path
):
    log = tmp_path / "up.log"
    env = {**os.environ, "BUTLER_DATA_DIR": str(tmp_path / "data")}
    most = 0
    with roster_up(roster, log, "--database-url", TEST_DSN, env=env) as proc:

        def all_up() -> bool:
            nonlocal most
            most = max(most, database_sockets(proc.pid))
            return proc.poll() is not None or all(healthy(p) for p in many)

        wait_until(all_up, timeout=240)
        assert proc.poll() is None, log.read_text()

        async def each_keeps_its_own(port: int) -> object:
            await call(port, "state_set", key="mine", value=port)
            return await call(port, "state_get", key="mine")

        async def every_butler() -> list[object]:
            nonlocal most
            answers = []
            for port in many:
                answers.append(await each_keeps_its_own(port))
                most = max(most, database_sockets(proc.pid))
            return answers

        assert asyncio.run(every_butler()) == many
        # The cap: the pools' and the locks' one. A connection closed to make room may
        # be seen a moment beside its replacement, hence the wait.
        wait_until(lambda: database_sockets(proc.pid) <= ROSTER_CONNECTIONS + 1, timeout=10)
    # Two connections a butler (its pool's and its lease's) would be 50 and more (the code
    # before this cap held 77); the lingering closed ones are a few at most.
    assert most <= ROSTER_CONNECTIONS + 1 + 9, log.read_text()[-2000:]
