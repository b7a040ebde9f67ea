"""The claim on a session a worker picked: whether it runs it, waiting out an outage meanwhile.

Between PgQueuer handing over a job and the runtime's start, the worker claims
the session on its row and checks the row is still open. The claim mints the
session's token and the key its result goes back with (a :class:`Pickup`): the
job carried none, so reading the queue gives nobody a way in. An error escaping
here reaches PgQueuer, which deletes the job: the session would never run and
its daemon would wait out the whole bound. So an outage is waited out (the job
stays held, its heartbeat going) for as long as the daemon waits, and a claim
retried after a lost reply is known for this pickup's own by its token.
"""

from __future__ import annotations

import logging
import secrets
import uuid

from butler.spawner.result import Ending
from butler.store.outages import through_outage
from butler.store.session_jobs import Pickup, SessionJobs

log = logging.getLogger(__name__)

#: A picked session whose worker sent no heartbeat for this long is another worker's
#: (``butler worker --heartbeat-timeout``).
HEARTBEAT_TIMEOUT_S = 60.0


def stopped(worker: str, heartbeat_timeout_s: float) -> Ending:
    """How a session ended whose worker stopped while it ran (no heartbeat for
    ``heartbeat_timeout_s``)."""
    return Ending(
        error=f"the worker {worker} stopped while this session ran (no heartbeat for "
        f"{heartbeat_timeout_s:g} s); it is not run again, since its runtime may have "
        "acted already"
    )


async def claim(
    jobs: SessionJobs,
    worker: str,
    session_id: str,
    bound_s: float,
    heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S,
) -> Pickup | None:
    """The pickup with which ``worker`` runs the session ``session_id`` (claimed here and
    still open); None when it does not run it.

    A session another worker held when it stopped is recorded as stopped, never run a
    second time (its runtime may have acted already; it came round again after
    ``heartbeat_timeout_s`` without a heartbeat); one whose row is closed is not run
    (nobody waits for it). An outage is waited out for up to ``bound_s``.
    """
    sid = session_id
    pickup = Pickup(uuid.uuid4().hex, secrets.token_urlsafe(32), secrets.token_urlsafe(32))

    def away(exc: BaseException) -> None:
        log.warning("the database is away at a pickup: waiting (%s)", type(exc).__name__)

    before = await through_outage(lambda: jobs.claim(sid, worker, pickup), bound_s, away)
    if before is not None:
        if await through_outage(lambda: jobs.open(sid), bound_s, away):
            result = stopped(before, heartbeat_timeout_s).to_json()
            await through_outage(
                lambda: jobs.put_result(sid, worker, result, pickup.key), bound_s, away
            )
        return None
    if not await through_outage(lambda: jobs.open(sid), bound_s, away):
        # Its daemon closed the row before any worker picked the job (a withdrawal that
        # failed at the session's bound, a row failed at a restart): nobody waits for a
        # result, and its runtime must not act for a session that ended.
        log.info("session closed before it was picked: not run", extra={"session_id": sid})
        return None
    return pickup
