"""A worker's result is the session's until its row records it: kept in the database
through a kill, a refusal or an outage of the database, and read once more as the
session's bound runs out."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from butler.config import load_config
from butler.spawner.completions import CompletionWriter
from butler.spawner.remote import wait_for_worker
from butler.store.session_jobs import Pickup, SessionJobs
from butler.store.sessions import NewSession, SessionOutcome, SessionStore
from tests.helpers import eventually
from tests.workers.tester import picked_job


async def _handed_back(jobs: SessionJobs, sid: str, result: dict) -> None:
    """``result`` as the worker ``w1`` hands it back, having claimed the session."""
    pickup = Pickup(uuid.uuid4().hex, "token", "key")
    await picked_job(jobs.db, sid)
    assert await jobs.claim(sid, "w1", pickup) is None
    await jobs.put_result(sid, "w1", result, pickup.key)


async def test_a_result_handed_back_stays_until_the_sessions_row_records_it(db, butler_dir):
    store, jobs = SessionStore(db), SessionJobs(db)
    sid = str(await store.create(NewSession("summarise", "external", "fake")))
    await _handed_back(jobs, sid, {"status": "succeeded", "result": {"output": "done"}})
    try:
        result = await wait_for_worker(load_config(butler_dir), jobs, sid, None, 10)
        assert result.output == "done"
        # The daemon killed here, its row still open: the next start reads this result
        # (handed_over.py) rather than failing a session whose work was done.
        assert await jobs.handed_back() == {sid}
        await store.complete(
            uuid.UUID(sid),
            SessionOutcome("succeeded", True, result.output, None, [], duration_ms=5),
        )
        assert await jobs.handed_back() == set()
    finally:
        await jobs.close()


async def test_a_completion_the_database_refuses_leaves_no_result_to_take_over_again(db, tmp_path):
    """Refused, the row stays open: its result kept, every later start would take the
    session over and be refused again (and remember its output again). Dropped, the next
    start fails the row as it fails any left open."""
    store, jobs = SessionStore(db), SessionJobs(db)
    sid = str(await store.create(NewSession("summarise", "external", "fake")))
    await _handed_back(jobs, sid, {"status": "succeeded", "result": {"output": "done"}})

    async def refuse(*_args: object) -> None:
        raise asyncpg.exceptions.CheckViolationError("the row breaks a constraint")

    store.complete = refuse  # type: ignore[method-assign]
    writer = CompletionWriter(store, tmp_path / "completions.jsonl")
    await writer.write(sid, SessionOutcome("succeeded", True, "done", None, [], duration_ms=5))
    try:
        assert await jobs.handed_back() == set()
        assert (await SessionStore(db).get(sid))["status"] != "succeeded"
    finally:
        await jobs.close()


async def test_a_result_handed_back_as_the_bound_runs_out_is_recorded_not_failed(db, butler_dir):
    """A restarted daemon past the session's bound (or a live wait whose wake-up was
    missed in its last seconds) reads the table once more before it says no worker
    reported: the result there is the session's."""
    store, jobs = SessionStore(db), SessionJobs(db)
    sid = str(await store.create(NewSession("summarise", "external", "fake")))
    await _handed_back(jobs, sid, {"status": "succeeded", "result": {"output": "done"}})
    try:
        result = await wait_for_worker(load_config(butler_dir), jobs, sid, None, 10, elapsed=20)
        assert result.output == "done"
    finally:
        await jobs.close()


@pytest.mark.parametrize(
    "outage",
    [
        asyncpg.exceptions.ReadOnlySQLTransactionError,  # a standby during a failover
        asyncpg.exceptions.TooManyConnectionsError,
        asyncpg.exceptions.DiskFullError,
        asyncpg.exceptions.DeadlockDetectedError,
    ],
)
async def test_a_completion_the_database_cannot_take_yet_is_retried_not_dropped(
    db, tmp_path, outage
):
    """Taken for a refusal, such an error dropped the outcome (and the worker's result):
    the caller was told it succeeded, and the next start failed the row."""
    store, jobs = SessionStore(db), SessionJobs(db)
    sid = str(await store.create(NewSession("summarise", "external", "fake")))
    await _handed_back(jobs, sid, {"status": "succeeded", "result": {"output": "done"}})
    complete, attempts = store.complete, []

    async def outage_then_back(*args: object) -> SessionOutcome:
        attempts.append(args)
        if len(attempts) == 1:
            raise outage("not now")
        return await complete(*args)  # type: ignore[arg-type]

    store.complete = outage_then_back  # type: ignore[method-assign]
    writer = CompletionWriter(store, tmp_path / "completions.jsonl")
    outcome = SessionOutcome("succeeded", True, "done", None, [], duration_ms=5)
    try:
        assert await writer.write(sid, outcome) is False  # being retried
        await eventually(lambda: writer.pending == 0, timeout=30)
        assert (await SessionStore(db).get(sid))["status"] == "succeeded"
        assert await jobs.handed_back() == set()
    finally:
        await jobs.close()
