"""Sessions an earlier daemon handed to workers: the next start waits for them again.

A daemon stopped by a crash or ``kill -9`` while a worker runs one of its
sessions leaves the session's row open and, in the database, what the session
still has: its job in PgQueuer's queue (waiting, or picked by a worker that is
running it now), or the result its worker handed back while no daemon waited.
Such a session is accepted work, and nothing of it is lost with the daemon, so
the starting daemon does not fail it (the recovery fails the other open rows).
Before it serves, for each one:

- a result already handed back is recorded as a live wait records it
  (:func:`~butler.spawner.remote.wait_for_worker`, then
  :meth:`~butler.spawner.closing.Closing.ended`, as for every session: the
  row's completion with the tool calls merged, the resumed share of its usage,
  its episode);
- else its runtime's token (minted by its worker, its digest on the open row)
  works here as in the earlier daemon, and the result is waited for again as
  long as the session may still run: its own time limit and ``PICKUP_GRACE_S``,
  counted from when it started; past that it fails with a line saying so
  (and a job no worker picked leaves the queue).

The waits begin once the butler serves (a start that fails before then leaves
the rows open for the next one). Each session waited for holds one of the
butler's slots, as it did in the daemon that handed it over; a drain ends the
wait as it ends a live one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from butler.runtimes.base import RuntimeResult
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.remote import PICKUP_GRACE_S, Job, wait_for_worker, withdraw
from butler.store.session_jobs import SessionJobs

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Handed:
    """An open session of an earlier daemon that the workers have: its row (with
    ``elapsed_s``), and its job while the job is in the queue."""

    session_id: str
    row: dict[str, Any]
    job_id: int | None = None
    job: Job | None = None


class HandedOver:
    """Finds the sessions an earlier daemon of this butler handed to workers, and waits
    for each one's result again; the spawner records how each ended
    (:meth:`~butler.spawner.spawner.Spawner.follow_handed_over`), as it records every
    session's end."""

    def __init__(
        self, lifecycle: SessionLifecycle, jobs: SessionJobs, cumulative: frozenset[str]
    ) -> None:
        self.lifecycle = lifecycle
        self.config = lifecycle.config
        self.jobs = jobs
        #: What the runtime reports as a resumed conversation's totals (usage.py).
        self.cumulative = cumulative
        #: Taken over at start, waited for once the butler serves.
        self._kept: list[Handed] = []

    async def take_over(self) -> list[str]:
        """Keep every open session the workers have; their ids. Done before the server
        accepts: their tokens work, and their calls count, from the start. The waits
        begin once the butler serves (:meth:`kept`)."""
        found = await self._find()
        for handed in found:
            self.lifecycle.ledger.open(handed.session_id)
        self._kept = found
        return [handed.session_id for handed in found]

    def kept(self) -> list[Handed]:
        """What :meth:`take_over` kept, handed out once: waited for from when the butler
        serves (a start that fails before, another butler of the roster refused, say,
        cancels nothing and leaves their rows open for the next start)."""
        kept, self._kept = self._kept, []
        return kept

    async def _find(self) -> list[Handed]:
        dropped = await self.jobs.forget_closed()
        if dropped:
            log.info("results of closed sessions dropped", extra={"results": dropped})
        rows = await self.lifecycle.sessions.unfinished()
        if not rows:
            return []
        queued, back = _by_session(await self.jobs.in_queue()), await self.jobs.handed_back()
        found = []
        for row in rows:
            sid = str(row["id"])
            if sid in back:  # the result is all that counts now, whatever the queue holds
                found.append(Handed(sid, row))
            elif sid in queued:
                found.append(Handed(sid, row, *queued[sid]))
        return found

    async def result(self, handed: Handed, since_start: float) -> RuntimeResult:
        """The worker's result; while the job is in the queue, waited for until the
        session's own bound from its start, ``since_start`` seconds ago (the wait for a
        slot included); a result handed back already is read at once."""
        job = handed.job
        timeout_s = job.session.timeout_s if job else None
        limit = (timeout_s or self.config.runtime.timeout_s) + PICKUP_GRACE_S
        elapsed = since_start if job is not None else None
        try:
            return await wait_for_worker(
                self.config, self.jobs, handed.session_id, handed.job_id, limit, elapsed=elapsed
            )
        except asyncio.CancelledError:
            if handed.job_id is not None:  # as for a live wait: no worker starts it afterwards
                await asyncio.shield(withdraw(self.jobs, handed.job_id))
            raise

    async def resumed(self, row: Mapping[str, Any]) -> dict[str, Any] | None:
        """The row of the session this one resumed, if any: a session asked for by another
        records its resumed one in its metadata, its parent being the asker
        (:meth:`Session.admitted`); only those are of source ``trigger``."""
        if not self.cumulative:
            return None
        if row["trigger_source"] == "trigger":
            parent = (row["metadata"] or {}).get("resumed_session_id")
        else:
            parent = row["parent_session_id"]
        return await self.lifecycle.sessions.get(str(parent)) if parent else None


def _by_session(in_queue: dict[int, bytes]) -> dict[str, tuple[int, Job]]:
    """The jobs in the queue by their session's id, with their job ids."""
    found = {}
    for job_id, payload in in_queue.items():
        try:
            job = Job.decode(payload)
        except ValueError:
            continue  # not a session's job: every payload the daemon wrote decodes
        found[job.session.id] = (job_id, job)
    return found
