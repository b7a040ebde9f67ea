"""A session's completion survives its database going away, live and across a restart."""

from __future__ import annotations

import contextlib
import stat
import uuid
from pathlib import Path

import pytest

from butler.config import RuntimeConfig, load_config
from butler.daemon import assemble
from butler.runtimes.registry import get_adapter
from butler.spawner.orphans import PGID_KEY
from butler.spawner.spawner import Spawner, TriggerRequest
from butler.store.credentials import CredentialStore
from butler.store.db import Database
from butler.store.embedded import EmbeddedPostgres
from butler.store.migrations import migrate
from tests.helpers import eventually, free_port, spawner_over, write_butler

pytestmark = pytest.mark.slow


def _runtime(gate: Path) -> dict:
    """A runtime that answers once ``gate`` exists (the test opens it when the database
    is down, so the completion always meets the outage, whatever the machine's load)."""
    wait = f"for i in $(seq 600); do [ -e {gate} ] && break; sleep 0.05; done"
    return {"type": "command", "command": ["bash", "-c", f"{wait}; echo slept well"]}


def _spawner(roster: Path, db: Database, totals: frozenset[str] = frozenset()) -> Spawner:
    """``totals``: what the runtime reports as a resumed conversation's running totals."""
    runtime = _runtime(roster / "gate")
    folder = write_butler(roster, "tester", port=free_port(), schema=db.schema, runtime=runtime)
    config = load_config(folder)
    adapter = get_adapter("command", RuntimeConfig(**runtime))
    adapter.cumulative_on_resume = totals
    return spawner_over(config, db, adapter=adapter, credentials=CredentialStore(db, {}))


async def _runtime_started(db: Database, sid: str) -> bool:
    """Whether the session's runtime process runs (its row has its process group): a
    ``running`` row alone is not enough, since a session whose slot was free is inserted
    ``running`` before it reads its credentials and starts its runtime."""
    with contextlib.suppress(Exception):
        row = await db.fetchrow(
            "SELECT status, metadata ? $2 AS started FROM sessions WHERE id = $1",
            uuid.UUID(sid),
            PGID_KEY,
        )
        return row is not None and row["status"] == "running" and row["started"]
    return False


async def _outage_during(spawner: Spawner, server: EmbeddedPostgres, db: Database):
    """Run a session and stop the database while its runtime runs; return the caller's result."""
    sid, task = await spawner.start(TriggerRequest("nap"))

    gate = spawner.config.config_dir.parent / "gate"
    gate.unlink(missing_ok=True)
    await eventually(lambda: _runtime_started(db, sid), timeout=30)
    await server.stop()
    gate.touch()
    return await task


async def test_completion_is_retried_and_replayed_across_a_database_outage(own_postgres, roster):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    db = Database(dsn, "outage")
    await db.connect()
    await migrate(db)
    spawner = _spawner(roster, db)
    journal = spawner.completions.journal.path
    try:
        # live: the caller gets its output while the database is down
        result = await _outage_during(spawner, server, db)
        assert result.success and result.output.strip() == "slept well"
        assert stat.S_IMODE(journal.stat().st_mode) == 0o600
        assert [e["session_id"] for e in spawner.completions.journal.entries()] == [
            result.session_id
        ]
        server = EmbeddedPostgres(own_postgres)
        assert await server.start() == dsn
        await eventually(lambda: spawner.completions.pending == 0, timeout=60)
        row = await spawner.sessions.get(result.session_id)
        assert (row["status"], row["output"].strip()) == ("succeeded", "slept well")
        assert not journal.exists()

        # across a restart: a daemon that stopped first replays the journal
        second = await _outage_during(spawner, server, db)
        assert second.success
        assert await spawner.completions.flush(0.5) == 1
        server = EmbeddedPostgres(own_postgres)
        assert await server.start() == dsn
        restarted = await assemble(spawner.config, db)
        row = await restarted.sessions.get(second.session_id)
        assert (row["status"], row["output"].strip(), row["error"]) == (
            "succeeded",
            "slept well",
            None,
        )
        assert not journal.exists()
    finally:
        await db.close()
        await server.stop()


async def test_a_runtime_reporting_running_totals_succeeds_through_an_outage_at_its_end(
    own_postgres, roster
):
    # Claude reports a resumed conversation's whole cost, Codex its tokens: the raw totals
    # go on the row with the outcome, journalled and retried with it, never in a statement
    # of their own that an outage at the session's end turned into a failed session.
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    db = Database(dsn, "totals")
    await db.connect()
    await migrate(db)
    spawner = _spawner(roster, db, frozenset({"cost_usd"}))  # as Claude Code's
    try:
        result = await _outage_during(spawner, server, db)
        assert (result.success, result.error) == (True, None)
        server = EmbeddedPostgres(own_postgres)
        assert await server.start() == dsn
        await eventually(lambda: spawner.completions.pending == 0, timeout=60)
        row = await spawner.sessions.get(result.session_id)
        assert row["status"] == "succeeded"
        assert row["metadata"]["runtime_totals"] == {"cost_usd": None}
    finally:
        await db.close()
        await server.stop()
