"""A session's runtime run by a worker on another machine: both ends of the hand-over.

The daemon admits and records the session as always, then, for a butler whose
``[butler.runtime] workers`` is ``"remote"``, hands the run to the job queue
(:func:`run_on_worker`: a :class:`Job`, the :class:`~butler.spawner.session.Session`
whole as JSON, and no token) instead of starting the runtime itself. A worker
picks the job (:mod:`butler.workers.worker`), mints the session's token as it
claims it, and runs it through the same function a local run takes
(:class:`~butler.spawner.execution.Execution`, by :mod:`.worker_runs`), and
hands back how it ended (an :class:`~butler.spawner.result.Ending` as JSON);
the daemon completes the row as it completes every session, merging the tool
calls its own server saw. See docs/scaling.md.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from butler.config import ButlerConfig
from butler.errors import ButlerError
from butler.runtimes.base import RuntimeFailure, RuntimeResult
from butler.spawner.placement import Placement
from butler.spawner.result import Ending
from butler.spawner.session import Session
from butler.store.outages import UNREACHABLE
from butler.store.session_jobs import SessionJobs

log = logging.getLogger(__name__)

#: Extra seconds past a session's own time limit for a worker to pick it up and report.
PICKUP_GRACE_S = 60.0


@dataclass(frozen=True)
class Job:
    """A session handed to the workers, as the queue carries it: the session whole, and
    no credential (whoever reads the queue could use one): the worker that claims it
    mints the session's token then (:mod:`butler.workers.claim`)."""

    session: Session
    #: The butler's memory for the session's system prompt, recalled by its daemon when it
    #: queued the job (None: nothing recalled). Carried, not read by the worker: a worker
    #: on its own database role reads no episode (docs/scaling.md).
    memory: str | None = None

    def encode(self) -> bytes:
        job: dict[str, Any] = {"session": self.session.to_json()}
        if self.memory is not None:
            job["memory"] = self.memory
        return json.dumps(job).encode()

    @classmethod
    def decode(cls, payload: bytes) -> Job:
        """The job :meth:`encode` gave; ValueError for anything else."""
        try:
            job = json.loads(payload)
            session, memory = job["session"], job.get("memory")
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a session's job: {type(exc).__name__}") from None
        if not isinstance(session, dict):
            raise ValueError("not a session's job: its session is of the wrong type")
        if memory is not None and not isinstance(memory, str):
            raise ValueError("not a session's job: its memory is of the wrong type")
        return cls(Session.from_json(session), memory)


def refuse_writable(session: Session) -> None:
    """Raise :class:`ButlerError` when ``session`` writes folders of the daemon's machine."""
    if session.writable:
        # A headless builder's worktree: a folder of the daemon's disk, which a worker on
        # another machine cannot write (its own copy would be lost with its workspace).
        raise ButlerError(
            "this butler runs its sessions on workers ([butler.runtime] workers = "
            '"remote"), and this session writes folders of the daemon\'s machine '
            f"({', '.join(str(p) for p in session.writable)}), which a worker cannot reach: "
            "spawn the builder without headless (an interactive builder runs in the "
            'daemon), or set workers = "local" for this butler'
        )


async def run_on_worker(
    config: ButlerConfig,
    jobs: SessionJobs,
    session: Session,
    here: tuple[Placement, Callable[[], Awaitable[RuntimeResult]]] | None = None,
    memory: str | None = None,
) -> RuntimeResult:
    """Hand ``session`` to the workers and wait for its result; with ``here`` (workers =
    "any", every local slot busy), run it here instead if a local slot comes first.
    ``memory`` (the butler's, for its system prompt) goes with the job.

    Raises :class:`RuntimeFailure` with what the runtime produced when it failed,
    and when no worker reported within the session's time limit and a grace;
    :class:`ButlerError` for a session a worker cannot run (it writes folders here).
    """
    refuse_writable(session)
    job_id = await jobs.enqueue(Job(session, memory).encode())
    limit = (session.timeout_s or config.runtime.timeout_s) + PICKUP_GRACE_S
    waiting = asyncio.ensure_future(jobs.wait_result(session.id))
    taken_back = False
    try:
        if here is not None:
            taken_back = await here[0].here_first(waiting, lambda: withdraw(jobs, job_id))
        if not taken_back:
            return await wait_for_worker(config, jobs, session.id, job_id, limit, waiting)
    except asyncio.CancelledError:
        # Cancelled (a drain, its caller gone): no worker may start it afterwards.
        await asyncio.shield(withdraw(jobs, job_id))
        raise
    finally:
        waiting.cancel()
    assert here is not None  # taken back: its local slot is held, the local run's own limits
    return await _run_here(*here)


async def wait_for_worker(
    config: ButlerConfig,
    jobs: SessionJobs,
    session_id: str,
    job_id: int | None,
    limit: float,
    waiting: asyncio.Future[tuple[str, dict[str, Any]]] | None = None,
    *,
    elapsed: float | None = None,
) -> RuntimeResult:
    """The result a worker hands back for the session (job ``job_id``, None once it left
    the queue), waited for until ``limit`` seconds have passed (``elapsed`` of them
    already: a session an earlier daemon handed over); then the job is withdrawn if no
    worker picked it.

    Raises :class:`RuntimeFailure` with what the runtime produced when it failed, and
    when no worker reported in time; a cancelled wait leaves the job to its caller.
    """
    waiting = waiting or asyncio.ensure_future(jobs.wait_result(session_id))
    try:
        async with asyncio.timeout(max(limit - (elapsed or 0.0), 0.0)):
            worker, handed = await waiting
    except TimeoutError:
        if job_id is not None:
            await withdraw(jobs, job_id)
        # A result handed back as the bound ran out (its wake-up missed, or before a
        # restarted daemon first looked) is the session's all the same.
        late = await _late_result(jobs, session_id)
        if late is None:
            since = "" if elapsed is None else " of its start (its daemon restarted meanwhile)"
            raise RuntimeFailure(
                f"no worker reported this session within {limit:g} s{since}: check that "
                f"`butler worker` runs for {config.name} (`butler workers`) and reaches "
                f"{config.callback_url}"
            ) from None
        worker, handed = late
    finally:
        waiting.cancel()
    # The result stays in the database until the session's row records it (in the same
    # statement, SessionStore.complete): a daemon killed before then finds it again.
    return result_of(worker, handed)


async def _late_result(jobs: SessionJobs, session_id: str) -> tuple[str, dict[str, Any]] | None:
    """The session's result if a worker handed it back, read once; None when the database
    cannot say (its outage outlasted the session's bound)."""
    try:
        return await jobs.result(session_id)
    except UNREACHABLE:
        return None


def result_of(worker: str, handed: dict[str, Any]) -> RuntimeResult:
    """The runtime's result as the worker handed it back (an :class:`Ending` as JSON);
    raises :class:`RuntimeFailure` (with what it produced) when it failed there."""
    end = Ending.from_json(handed)
    if end.status != "succeeded":
        error = end.error or "the runtime failed on its worker"
        raise RuntimeFailure(f"{error} (on worker {worker})", end.result)
    return end.result


async def _run_here(
    placement: Placement, run: Callable[[], Awaitable[RuntimeResult]]
) -> RuntimeResult:
    """The session runs in the daemon after all, in the local slot it holds."""
    try:
        return await run()
    finally:
        placement.release_here()


async def withdraw(jobs: SessionJobs, job_id: int) -> bool:
    """Whether the job was taken back before a worker picked it (its session cancelled)."""
    try:
        return await jobs.withdraw(job_id)
    except Exception as exc:  # the database away: the job stays, but its token is revoked
        log.warning("job %s not withdrawn: %s: %s", job_id, type(exc).__name__, exc)
        return False
