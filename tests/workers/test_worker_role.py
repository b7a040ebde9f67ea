"""What a worker's own database role reaches (``butler worker --init-role``, migration
020): the job queue, and none of the butler's rows; a session's row only through the
checked claim and result. Each test attacks with the role's own URL, as a thief of a
worker machine would."""

from __future__ import annotations

import json
import uuid

import asyncpg
import pytest

from butler.errors import UserError
from butler.spawner.remote import Job
from butler.spawner.session import Session
from butler.store.db import Database
from butler.store.session_jobs import Pickup, SessionJobs, WorkerSessionRows
from butler.store.sessions import NewSession, SessionStore
from butler.store.worker_role import init_role, reaches_schema
from tests.workers.tester import as_role, picked_job, worker_role

#: Everything the role may read: the queue, the workers' rows, the migration level.
QUEUE = {"pgqueuer", "pgqueuer_log", "pgqueuer_statistics", "workers", "butler_migrations"}


async def _session(db: Database) -> str:
    return str(await SessionStore(db).create(NewSession("summarise", "external", "fake")))


async def test_the_worker_role_may_read_no_table_of_the_butlers_own(db):
    tables = {
        r["tablename"]
        for r in await db.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", db.schema)
    }
    assert {"sessions", "state", "credentials", "memory_episodes", "session_results"} <= tables
    async with worker_role(db) as url, as_role(url, db.schema) as conn:
        readable = set()
        for table in sorted(tables):
            try:
                await conn.fetch(f'SELECT * FROM "{table}" LIMIT 1')
                readable.add(table)
            except asyncpg.InsufficientPrivilegeError:
                pass
        assert readable == QUEUE
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("UPDATE sessions SET status = 'failed'")
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("INSERT INTO state (key, value) VALUES ('k', '1'::jsonb)")


async def test_a_queued_job_read_with_the_worker_role_holds_no_token(db):
    sid = await _session(db)
    jobs = SessionJobs(db)
    await jobs.enqueue(Job(Session(id=sid, prompt="summarise")).encode())
    try:
        async with worker_role(db) as url, as_role(url, db.schema) as conn:
            payload = await conn.fetchval("SELECT payload FROM pgqueuer WHERE status = 'queued'")
            job = json.loads(bytes(payload))
            assert job["session"]["id"] == sid and job["session"]["prompt"] == "summarise"
            assert "token" not in json.dumps(job).lower(), job
            # Nor is one minted before a worker claims the session (its row says so, and
            # the role cannot read that row at all).
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.fetchval("SELECT metadata FROM sessions WHERE id = $1", uuid.UUID(sid))
        metadata = await db.fetchval("SELECT metadata FROM sessions WHERE id = $1", uuid.UUID(sid))
        assert "token_digest" not in metadata
    finally:
        await jobs.close()


async def test_a_result_forged_with_the_worker_role_for_a_claim_it_does_not_hold_is_refused(db):
    sid = await _session(db)
    await picked_job(db, sid)
    genuine = Pickup(uuid.uuid4().hex, "token", "key")
    async with worker_role(db) as url:
        worker_db = Database(url, db.schema, max_size=2, create_schema=False)
        await worker_db.connect()
        try:
            jobs = SessionJobs(worker_db)
            assert await jobs.claim(sid, "host:1", genuine) is None
            async with as_role(url, db.schema) as attacker:
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await attacker.execute(
                        "INSERT INTO session_results (session_id, worker, result)"
                        " VALUES ($1, 'attacker:1', '{}'::jsonb)",
                        uuid.UUID(sid),
                    )
                forged = json.dumps({"status": "succeeded", "result": {"output": "FORGED"}})
                with pytest.raises(asyncpg.InsufficientPrivilegeError, match="holds its claim"):
                    await attacker.execute(
                        "SELECT worker_result($1, 'attacker:1', $2::jsonb, 'a guess')",
                        uuid.UUID(sid),
                        forged,
                    )
            assert await db.fetchval("SELECT count(*) FROM session_results") == 0
            # The worker that holds the claim hands its result back with the same role.
            done = {"status": "succeeded", "result": {"output": "done"}}
            await jobs.put_result(sid, "host:1", done, genuine.key)
            assert await SessionJobs(db).result(sid) == ("host:1", done)
        finally:
            await worker_db.close()


async def test_the_worker_role_cannot_claim_a_session_no_picked_job_names(db):
    """A claim mints the token the butler accepts for the session: taken for a session of
    the daemon's own (no job names it), it would let the role act as that session."""
    local = await _session(db)
    queued = await _session(db)
    job_id = await picked_job(db, queued)
    async with worker_role(db) as url, as_role(url, db.schema) as conn:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="no picked job"):
            await conn.fetchval(
                "SELECT worker_claim($1, 'attacker:1', 'p', 'digest', 'digest')",
                uuid.UUID(local),
            )
        # Nor can it point a job at that session: a job's payload is the daemon's.
        payload = json.dumps({"session": {"id": local}}).encode()
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("UPDATE pgqueuer SET payload = $1 WHERE id = $2", payload, job_id)
    metadata = await db.fetchval("SELECT metadata FROM sessions WHERE id = $1", uuid.UUID(local))
    assert "worker" not in metadata


async def test_what_the_jail_saw_is_recorded_with_the_worker_role_and_nothing_else(db):
    queued, local = await _session(db), await _session(db)
    await picked_job(db, queued)
    async with worker_role(db) as url:
        worker_db = Database(url, db.schema, max_size=1, create_schema=False)
        await worker_db.connect()
        try:
            rows = WorkerSessionRows(worker_db)
            seen = {"blocked": 1, "blocked_hosts": ["evil.example"]}
            await rows.update_metadata(uuid.UUID(queued), {"sandbox": seen, "worker": "forged"})
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await rows.update_metadata(uuid.UUID(local), {"sandbox": seen})
        finally:
            await worker_db.close()
    metadata = await db.fetchval("SELECT metadata FROM sessions WHERE id = $1", uuid.UUID(queued))
    assert metadata["sandbox"] == seen and "worker" not in metadata


async def test_a_worker_role_reaches_only_the_schemas_whose_queue_it_was_granted(db):
    """A butler whose daemon is older than the grants: the worker says it was not granted
    that butler (one line at its start), rather than that its migrations disagree."""
    older = f"t_{uuid.uuid4().hex[:12]}"
    await db.execute(f'CREATE SCHEMA "{older}"')
    await db.execute(f'CREATE TABLE "{older}".butler_migrations (version integer)')
    try:
        async with worker_role(db) as url:
            for schema, reached in ((db.schema, True), (older, False)):
                as_worker = Database(url, schema, max_size=1, create_schema=False)
                await as_worker.connect()
                try:
                    assert await reaches_schema(as_worker) is reached, schema
                finally:
                    await as_worker.close()
    finally:
        await db.execute(f'DROP SCHEMA "{older}" CASCADE')


async def test_init_role_refuses_a_role_that_is_not_a_workers(db):
    name = f"not_a_worker_{uuid.uuid4().hex[:8]}"
    await db.execute(f"CREATE ROLE {name} LOGIN")
    conn = await asyncpg.connect(db.dsn)
    try:
        with pytest.raises(UserError, match="is no worker's"):
            await init_role(conn, name, [db.schema])
    finally:
        await conn.close()
        await db.execute(f"DROP ROLE {name}")
