"""A session this worker claimed: noted in its machine's ledger, run, handed back.

The ledger entry (:mod:`.ledger`) is written before the runtime starts and
removed only once the result is in the database: a worker killed in between
leaves it for the next worker on this machine to record (:mod:`.sweep`). A
result the database cannot take (an outage) waits in the entry and is tried
again with a growing pause, as long as the daemon waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Coroutine
from typing import Any

from butler.processes import start_ticks
from butler.spawner.remote import PICKUP_GRACE_S, Job
from butler.spawner.result import Ending
from butler.spawner.worker_runs import WorkerRuns
from butler.store.outages import UNREACHABLE, through_outage
from butler.store.session_jobs import Pickup, SessionJobs
from butler.workers import ledger

log = logging.getLogger(__name__)

#: How often a running session's row is looked at, to end a runtime whose session closed.
WATCH_S = 2.0


async def run_claimed(
    runs: WorkerRuns, jobs: SessionJobs, worker: str, job: Job, pickup: Pickup, job_id: int
) -> None:
    """Run ``job``'s session (claimed by ``worker`` in ``pickup``) and hand its ending to
    the daemon."""
    session = job.session
    entry = ledger.Entry(
        owner=os.getpid(),
        owner_ticks=ledger.owner_ticks(),
        worker=worker,
        butler=runs.config.name,
        schema=runs.config.db_schema,
        session_id=session.id,
        job_id=job_id,
        runtime=runs.config.runtime.type,
        key=pickup.key,
    )
    ledger.note(entry)

    def started(pid: int) -> None:
        nonlocal entry
        entry = ledger.started(entry, pid, start_ticks(pid))

    end = await _unless_closed(runs.run(session, pickup.token, started), jobs, session.id)
    if end is None:
        log.warning(
            "the session was closed while it ran here: its runtime is ended",
            extra={"session_id": session.id},
        )
        ledger.forget(entry)
        return
    result = end.to_json()
    entry = ledger.ended(entry, result)
    bound = (session.timeout_s or runs.config.runtime.timeout_s) + PICKUP_GRACE_S
    if await hand_back(jobs, worker, session.id, result, pickup.key, bound):
        ledger.forget(entry)
    # else: kept with its result; this machine's next worker hands it back (sweep.py)


async def _unless_closed(
    run: Coroutine[Any, Any, Ending], jobs: SessionJobs, session_id: str
) -> Ending | None:
    """What ``run`` returns; None when the session's row closed first (``run`` is then
    cancelled, which ends its runtime)."""
    running = asyncio.ensure_future(run)
    watching = asyncio.ensure_future(_closed(jobs, session_id))
    try:
        await asyncio.wait({running, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        if not running.done():
            running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await running
    if running.cancelled():
        return None
    return running.result()


async def _closed(jobs: SessionJobs, session_id: str) -> None:
    """Return once the session's row is closed; a failed look is no answer (a database
    away, or one refusing connections: a healthy session must never be ended for it)."""
    while True:
        await asyncio.sleep(WATCH_S)
        try:
            if not await jobs.open(session_id):
                return
        except UNREACHABLE:
            continue
        except Exception as exc:
            log.warning(
                "could not look at the session's row: %s: %s",
                type(exc).__name__,
                exc,
                extra={"session_id": session_id},
            )


async def hand_back(
    jobs: SessionJobs,
    worker: str,
    session_id: str,
    result: dict[str, Any],
    key: str,
    bound_s: float,
) -> bool:
    """Put ``result`` (with its pickup's ``key``) in the database, waiting through an
    outage for up to ``bound_s`` (the daemon waits as long); False when it could not."""
    told: list[BaseException] = []

    def away(exc: BaseException) -> None:
        if not told:  # once: the wait may last as long as the session's bound
            told.append(exc)
            log.warning(
                "the database is away: the session's result waits on this worker",
                extra={"session_id": session_id, "error": f"{type(exc).__name__}"},
            )

    try:
        await through_outage(
            lambda: jobs.put_result(session_id, worker, result, key), bound_s, away
        )
        return True
    except UNREACHABLE:
        log.error(
            "the database stayed away: the session's result is kept on this worker's disk "
            "and handed back when it starts again",
            extra={"session_id": session_id},
        )
        return False
