"""Headless sessions: admitted, recorded, run here or on a worker, their ends recorded.

Every session of a butler but an interactive one takes these steps. A request
is admitted or refused at once (:mod:`.admission`, :mod:`.chains`) and
described once (:meth:`Session.admitted <butler.spawner.session.Session.admitted>`);
its row is written under its ``butler.session`` span; it waits for a slot and
a place (:mod:`.placement`), its runtime runs in the daemon
(:class:`~butler.spawner.execution.Execution`) or on a worker (:mod:`.remote`),
and :class:`~butler.spawner.closing.Closing` records how it ended. Sessions an
earlier daemon handed to workers (:mod:`.handed_over`) are taken back into the
same slots and the same ending.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time

from opentelemetry import context as otel_context
from opentelemetry.trace import Status, StatusCode

from butler.errors import ButlerError, Rejected
from butler.runtimes.base import ProgressSink, RuntimeResult
from butler.spawner.activity import Activity
from butler.spawner.admission import Admission, Reservation, validate_trigger_source
from butler.spawner.chains import Chains
from butler.spawner.closing import Closing
from butler.spawner.episodes import memory_context
from butler.spawner.execution import Execution
from butler.spawner.handed_over import Handed, HandedOver
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.orphans import recorder
from butler.spawner.placement import Place, Placement
from butler.spawner.remote import run_on_worker
from butler.spawner.request import TriggerRequest
from butler.spawner.result import Ending, SpawnerResult
from butler.spawner.resume import resumable
from butler.spawner.session import Session
from butler.store.session_jobs import SessionJobs
from butler.store.workers import WorkerRows
from butler.telemetry import trace_id_of, tracer


class HeadlessSessions:
    """The headless sessions of one butler, from admission to their recorded end."""

    def __init__(
        self,
        runs: Execution,
        lifecycle: SessionLifecycle,
        admission: Admission,
        chains: Chains,
        activity: Activity,
    ) -> None:
        self.config, self.adapter, self.sessions = runs.config, runs.adapter, runs.sessions
        #: How a session's runtime runs in this daemon.
        self.runs = runs
        self._lifecycle = lifecycle
        self._admission = admission
        self._activity = activity
        self._chains = chains
        self._jobs = SessionJobs(runs.sessions.db)
        if runs.config.runtime.workers != "local":
            # A worker's runtime calls with the token its worker minted at pickup.
            lifecycle.tokens.lookup = self._jobs.claimed_session
        self._placement = Placement(runs.config, WorkerRows(runs.sessions.db))
        cumulative = runs.adapter.cumulative_on_resume
        #: How each session's end is recorded, whichever path ran it.
        self._closing = Closing(lifecycle, runs.memory, cumulative)
        #: Sessions an earlier daemon handed to workers, waited for again (recovery.py).
        self.handed_over = HandedOver(lifecycle, self._jobs, cumulative)
        #: Every session's task, which a drain waits for.
        self.tasks: set[asyncio.Task[SpawnerResult]] = set()

    async def start(
        self, request: TriggerRequest, progress: ProgressSink | None = None
    ) -> tuple[str, asyncio.Task[SpawnerResult]]:
        """Admit a request and start its session; return its id once it is recorded.

        Raises :class:`Rejected` when the request is refused, and
        :class:`SessionNotFound` when it resumes a session that cannot be resumed.
        """
        try:
            validate_trigger_source(request.trigger_source)
        except ValueError as exc:
            raise Rejected(str(exc)) from None
        reservation = self._admission.reserve()
        try:
            async with self._chains.admit(request.caller_session_id) as place:
                parent = await resumable(self.sessions, self.adapter, request.resume_session_id)
                session = Session.admitted(request, parent, place)
                recorded: asyncio.Future[str] = asyncio.get_running_loop().create_future()
                steps = self._recorded_session(session, parent, progress, recorded, reservation)
                task = asyncio.create_task(steps)
                self._track(task)
                task.add_done_callback(lambda _: reservation.release())  # however it ended
                await asyncio.wait([recorded, task], return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            reservation.release()  # harmless once the session holds it
            raise
        if not recorded.done():
            task.result()  # the session failed before it was recorded: raise why
            raise ButlerError("session ended before it was recorded")
        return recorded.result(), task

    async def _recorded_session(
        self,
        session: Session,
        parent: dict | None,
        progress: ProgressSink | None,
        recorded: asyncio.Future[str],
        reservation: Reservation,
    ) -> SpawnerResult:
        with tracer().start_as_current_span(
            "butler.session",
            attributes={
                "butler.name": self.config.name,
                "butler.trigger_source": session.source,
                "butler.runtime": self.adapter.type_name,
            },
        ) as span:
            new = self._lifecycle.new(session, trace_id_of(span))
            span.set_attribute("butler.session_id", session.id)
            # A free slot is taken before the row is written, so the row is written as
            # running: one statement (and one dead row version) fewer per session. Not
            # where the placement may still wait for a local slot (workers = "any"):
            # that session is pending until it has a place.
            taken = self._placement.never_waits() and await self._admission.take_if_free(
                reservation
            )
            try:
                sid = await self._lifecycle.create(new, otel_context.get_current(), running=taken)
            except BaseException:
                if taken:
                    self._admission.give_back()
                raise
            recorded.set_result(sid)

            async def steps(end: Ending) -> dict | None:
                await self._execute(session, end, progress, reservation, taken)
                return parent

            result = await self._closing.ended(sid, session.prompt, steps)
            if result.error:
                span.set_status(Status(StatusCode.ERROR, result.error))
            return result

    async def _execute(
        self,
        session: Session,
        end: Ending,
        progress: ProgressSink | None,
        reservation: Reservation,
        taken: bool = False,
    ) -> None:
        """Wait for a slot (unless ``taken``, and the row written as running) and a
        place, and run the runtime: its result in ``end``."""
        sid = session.id
        try:
            if progress and not taken:  # nothing is awaited before the taken slot is held
                await progress("queued")
            # A session waiting for a place (workers = "any", no live worker) is queued.
            async with (
                self._admission.slot(reservation, taken=taken),
                self._placement.place(session) as place,
            ):
                if not taken:
                    await self._lifecycle.running(sid, session.timeout_s)
                elif progress:  # the caller hears the same steps either way
                    await progress("queued")
                end.started = time.monotonic()
                if progress:
                    await progress("running")
                watched = self._activity.watch(sid, progress)
                end.result = await self._run(session, watched, place)
        finally:
            self._activity.close(sid)

    async def _run(
        self, session: Session, progress: ProgressSink | None, place: Place
    ) -> RuntimeResult:
        """The session's runtime run here, or on a worker (which names itself on the row)."""
        if place == "here":
            return await self._run_here(session, progress)
        if place == "worker":
            await self._placement.refuse_strangers()
        here = (self._placement, lambda: self._run_here(session, progress))
        either = here if place == "either" else None
        # Recalled here, where the rows are: the worker's role may read none.
        memory = await memory_context(self.config, self.runs.memory, session.id)
        return await run_on_worker(self.config, self._jobs, session, either, memory)

    async def _run_here(self, session: Session, progress: ProgressSink | None) -> RuntimeResult:
        """In this daemon: each runtime process group goes on the row, so that a daemon
        killed outright leaves nothing the next start cannot find (orphans.py)."""
        record = recorder(functools.partial(self._lifecycle.annotate, session.id))
        return await self.runs.run(session, self._lifecycle.tokens, progress, record)

    def follow_handed_over(self) -> None:
        """Wait again for the sessions an earlier daemon handed to workers (taken over by
        :func:`~butler.spawner.recovery.recover`), each holding a slot while its job is
        in the queue, and record how each ended. Called once the butler serves."""
        for handed in self.handed_over.kept():
            self._track(asyncio.create_task(self._taken_back(handed)))

    async def _taken_back(self, handed: Handed) -> SpawnerResult:
        row = handed.row
        started = time.monotonic() - max(0.0, float(row["elapsed_s"]))

        async def steps(end: Ending) -> dict | None:
            # A result already handed back needs no slot: it is recorded at once.
            async with self._admission.slot() if handed.job else contextlib.nullcontext():
                end.result = await self.handed_over.result(handed, time.monotonic() - started)
            return await self.handed_over.resumed(row)

        return await self._closing.ended(handed.session_id, row["prompt"], steps, started)

    def _track(self, task: asyncio.Task[SpawnerResult]) -> None:
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def close(self) -> None:
        """Let go of the job queue's connections (a drain, once every session ended)."""
        await self._jobs.close()
