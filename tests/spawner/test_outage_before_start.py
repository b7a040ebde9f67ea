"""A database outage in the instant between a session's admission and its runtime's start:
the session waits the outage out and runs, as a queued one does."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path

import pytest

from butler.config import load_config
from butler.spawner.spawner import TriggerRequest
from butler.store.credentials import CredentialStore
from butler.store.db import Database
from butler.store.embedded import EmbeddedPostgres
from butler.store.migrations import migrate
from butler.store.sessions import NewSession, SessionStore
from tests.helpers import free_port, spawner_over, write_butler

pytestmark = pytest.mark.slow

#: The runtime needs a credential of the database's table (read as it starts).
RUNTIME = {"type": "command", "command": ["bash", "-c", 'echo "ran with $SERVICE_KEY"']}
OUTAGE_S = 3


class _StopsAfterAdmission(SessionStore):
    """The real store; the first session row written stops the real server at once and
    starts it again ``OUTAGE_S`` later (an outage at exactly the worst moment)."""

    def __init__(self, db: Database, server: EmbeddedPostgres, data: Path) -> None:
        super().__init__(db)
        self.server, self.data = server, data
        self.outage: asyncio.Task | None = None

    async def create(self, new: NewSession, status: str = "pending") -> uuid.UUID:
        created = await super().create(new, status)
        if self.outage is None:
            await self.server.stop()
            self.server = EmbeddedPostgres(self.data)
            self.outage = asyncio.create_task(self._back_later(self.server))
        return created

    async def _back_later(self, server: EmbeddedPostgres) -> None:
        await asyncio.sleep(OUTAGE_S)
        await server.start()


async def test_a_session_admitted_just_before_an_outage_waits_for_the_database_and_runs(
    own_postgres, roster
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    db = Database(dsn, "before_start")
    await db.connect()
    await migrate(db)
    await CredentialStore(db, {}).set("SERVICE_KEY", "from-the-table")
    extra = '[butler.env]\nrequired = ["SERVICE_KEY"]\n'
    folder = write_butler(
        roster, "tester", port=free_port(), schema=db.schema, runtime=RUNTIME, extra=extra
    )
    config = load_config(folder)
    sessions = _StopsAfterAdmission(db, server, own_postgres)
    spawner = spawner_over(config, db, sessions=sessions, credentials=CredentialStore(db, {}))
    try:
        result = await asyncio.wait_for(spawner.trigger(TriggerRequest("go")), 120)
        assert sessions.outage is not None  # the outage did happen, after the admission
        assert result.success, result.error
        assert result.output.strip() == "ran with from-the-table"
    finally:
        if sessions.outage is not None:
            with contextlib.suppress(Exception):
                await sessions.outage
        await db.close()
        await sessions.server.stop()
