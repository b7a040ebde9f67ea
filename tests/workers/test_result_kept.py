"""A worker's result stays in the database until the session's row records it: a daemon
killed after reading it, before writing the row, finds it again at its next start."""

from __future__ import annotations

import uuid

from butler.config import load_config
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
