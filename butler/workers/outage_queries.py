"""PgQueuer's queries for a worker's main loop, waiting out a database outage.

PgQueuer's ``QueueManager.run`` looks at the queue (a dequeue, then how long to
sleep) with nothing around it: one look while the database is away raises out of
the loop, and the worker ended with it, taking no work until restarted by hand.
Whether an outage meets a look is chance (a NOTIFY, the poll, a session's end
under load), so an outage of any length could end a worker. Here those looks
wait the outage out instead, trying again with a growing pause
(:func:`~butler.store.outages.through_outage`): the loop pauses, the sessions it
holds run on (their heartbeats and logs are PgQueuer's buffers, which keep what
they could not write and try again), and it takes work again once the database
is back (the LISTEN comes back by :mod:`.listen`).

A dequeue whose reply was lost may have picked a job all the same: that job
comes round again after the heartbeat timeout, as any job of a stopped worker.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from pgqueuer import Queries
from pgqueuer.models import Job
from pgqueuer.queries import EntrypointExecutionParameter

from butler.store.outages import through_outage

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclasses.dataclass
class OutageQueries(Queries):
    """:class:`pgqueuer.Queries` whose main-loop looks wait out an outage (one line when
    the database goes, one when it is back)."""

    away: bool = dataclasses.field(default=False, init=False)

    async def _through_outage(self, attempt: Callable[[], Awaitable[T]]) -> T:
        def waiting(exc: BaseException) -> None:
            if not self.away:
                self.away = True
                log.warning(
                    "the database is away: this worker takes no new work until it is "
                    "back (running sessions go on): %s",
                    type(exc).__name__,
                )

        result = await through_outage(attempt, math.inf, waiting)
        if self.away:
            self.away = False
            log.info("the database is back: this worker takes work again")
        return result

    async def dequeue(
        self,
        batch_size: int,
        entrypoints: dict[str, EntrypointExecutionParameter],
        queue_manager_id: object,
        global_concurrency_limit: int | None,
        heartbeat_timeout: timedelta,
    ) -> list[Job]:
        dequeue = super().dequeue
        return await self._through_outage(
            lambda: dequeue(
                batch_size=batch_size,
                entrypoints=entrypoints,
                queue_manager_id=queue_manager_id,
                global_concurrency_limit=global_concurrency_limit,
                heartbeat_timeout=heartbeat_timeout,
            )
        )

    async def queued_work(self, entrypoints: list[str]) -> int:
        queued_work = super().queued_work
        return await self._through_outage(lambda: queued_work(entrypoints))

    async def eligible_queued_work(self, entrypoints: list[str]) -> int:
        eligible_queued_work = super().eligible_queued_work
        return await self._through_outage(lambda: eligible_queued_work(entrypoints))

    async def next_deferred_eta(self, entrypoints: list[str]) -> timedelta | None:
        next_deferred_eta = super().next_deferred_eta
        return await self._through_outage(lambda: next_deferred_eta(entrypoints))
