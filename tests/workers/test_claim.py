"""A job a worker picked while the database goes away: the outage is waited out and the
session runs once; an error there used to reach PgQueuer, which deleted the job, and the
session never ran while its daemon waited out its whole bound."""

from __future__ import annotations

import uuid

from butler.store.session_jobs import Pickup, SessionJobs
from butler.store.sessions import NewSession, SessionStore
from butler.workers.claim import claim
from tests.workers.tester import picked_job


async def _session(db) -> tuple[SessionJobs, str]:
    sid = str(await SessionStore(db).create(NewSession("summarise", "external", "fake")))
    await picked_job(db, sid)
    return SessionJobs(db), sid


async def test_a_claim_whose_reply_an_outage_lost_is_this_pickups_own_and_runs(db):
    jobs, sid = await _session(db)
    on_the_row, tries = jobs.claim, []

    async def reply_lost(*args: object) -> str | None:
        tries.append(args)
        before = await on_the_row(*args)
        if len(tries) == 1:  # written, but the connection dropped before the reply came
            raise ConnectionResetError("connection lost")
        return before

    jobs.claim = reply_lost  # type: ignore[method-assign]
    assert await claim(jobs, "host:1", sid, bound_s=30)
    assert len(tries) == 2
    assert await jobs.handed_back() == set()  # not recorded as a stopped worker's


async def test_an_outage_at_the_rows_look_is_waited_out(db):
    jobs, sid = await _session(db)
    look, tries = jobs.open, []

    async def away_once(session_id: str) -> bool:
        tries.append(session_id)
        if len(tries) == 1:
            raise ConnectionRefusedError("the database is away")
        return await look(session_id)

    jobs.open = away_once  # type: ignore[method-assign]
    assert await claim(jobs, "host:1", sid, bound_s=30)
    assert len(tries) == 2


async def test_a_session_a_stopped_worker_held_is_recorded_not_run_again(db):
    jobs, sid = await _session(db)
    assert await jobs.claim(sid, "host:1", Pickup(uuid.uuid4().hex, "t", "k")) is None
    assert not await claim(jobs, "host:2", sid, bound_s=30)
    worker, result = await jobs.result(sid)
    assert worker == "host:2" and "the worker host:1 stopped" in result["error"]
