"""A worker's result stays in the database until the session's row records it: a daemon
killed after reading it, before writing the row, finds it again at its next start."""

from __future__ import annotations

import uuid

import asyncpg

from butler.config import load_config
from butler.spawner.completions import CompletionWriter
from butler.spawner.remote import wait_for_worker
from butler.store.session_jobs import SessionJobs
from butler.store.sessions import NewSession, SessionOutcome, SessionStore


async def test_a_result_handed_back_stays_until_the_sessions_row_records_it(db, butler_dir):
    store, jobs = SessionStore(db), SessionJobs(db)
    sid = str(await store.create(NewSession("summarise", "external", "fake")))
    await jobs.put_result(sid, "w1", {"status": "succeeded", "result": {"output": "done"}})
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
    await jobs.put_result(sid, "w1", {"status": "succeeded", "result": {"output": "done"}})

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
