"""The spawner: a trigger becomes one recorded, locked-down runtime session.

Runtime-agnostic: it knows runtimes only through :class:`RuntimeAdapter`. For
each trigger it admits or refuses (:mod:`.admission`), records the session
before the runtime starts and completes it whatever happened
(:mod:`.lifecycle`), and runs the session's runtime here (:mod:`.execution`: its
invocation in a private workspace, jailed, under a time limit) or on a worker
(:mod:`.remote`), handing each the :class:`~butler.spawner.session.Session` it
described once, at admission. Interactive sessions (a
builder's runtime in tmux) take the same steps through :meth:`Spawner.interactive`
(:mod:`.interactive`), which the spawner also adopts and finishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import time
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Status, StatusCode

from butler.errors import ButlerError, Rejected
from butler.paths import butler_dir
from butler.runtimes.base import ProgressSink, RuntimeResult
from butler.sandbox.folders import sweep_jail_folders
from butler.sandbox.pool import sweep_warm_homes
from butler.security.session_tokens import SessionTokens
from butler.spawner.activity import Activity
from butler.spawner.admission import Admission, Reservation, validate_trigger_source
from butler.spawner.chains import Chains
from butler.spawner.closing import Closing
from butler.spawner.completions import CompletionWriter
from butler.spawner.execution import TIMEOUT_GRACE_S, Execution
from butler.spawner.handed_over import Handed, HandedOver
from butler.spawner.homes import prune_homes
from butler.spawner.interactive import (
    InteractiveEnd,
    InteractiveRequest,
    InteractiveSessions,
    InteractiveStart,
)
from butler.spawner.ledger import ToolCallLedger
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.orphans import recorder
from butler.spawner.placement import Place, Placement
from butler.spawner.remote import run_on_worker
from butler.spawner.request import TriggerRequest
from butler.spawner.result import (
    CLIENT_GONE,
    SHUTDOWN,
    Ending,
    SpawnerResult,
    queued,
    rejected,
)
from butler.spawner.resume import resumable
from butler.spawner.sandboxing import open_pool
from butler.spawner.session import Session
from butler.spawner.workspace import sweep_leftovers
from butler.store.session_jobs import SessionJobs
from butler.store.sessions import SessionOutcome
from butler.store.workers import WorkerRows
from butler.telemetry import trace_id_of, tracer


class Spawner:
    """Runs triggers of one butler through its runtime adapter."""

    def __init__(self, runs: Execution, ledger: ToolCallLedger | None = None) -> None:
        """A spawner that runs its butler's sessions as ``runs`` says (assembled by
        :meth:`Execution.over`), keeping warm jails for them when it may."""
        config, adapter, sessions = runs.config, runs.adapter, runs.sessions
        self.config, self.adapter, self.sessions = config, adapter, sessions
        self.credentials, self.memory = runs.credentials, runs.memory
        self.ledger = ledger or ToolCallLedger()
        self.activity = Activity()
        rt = config.runtime
        self._admission = Admission(rt.max_concurrent_sessions, rt.max_queued_sessions)
        self._tasks: set[asyncio.Task[SpawnerResult]] = set()
        self._chains = Chains(config, sessions)
        self._lifecycle = SessionLifecycle(
            config, sessions, self.ledger, adapter.type_name, lambda: self._admission.waiting
        )
        #: What runtimes run in: "bwrap" (jailed) or "none"; decided once, at start.
        self._sandbox = runs.sandbox
        self._jobs = SessionJobs(sessions.db)
        self._placement = Placement(config, WorkerRows(sessions.db))
        self._interactive = InteractiveSessions(
            config, adapter, self.credentials, self._lifecycle, self._sandbox
        )
        #: Warm jails this butler's sessions take theirs from; closed by :meth:`drain`.
        self._pool = open_pool(config, self._sandbox)
        self._runs = dataclasses.replace(runs, pool=self._pool)
        #: How each headless session's end is recorded, whichever path ran it.
        self._closing = Closing(self._lifecycle, self.memory, adapter.cumulative_on_resume)
        #: Sessions an earlier daemon handed to workers, waited for again (recovery.py).
        self.handed_over = HandedOver(self._lifecycle, self._jobs, adapter.cumulative_on_resume)

    @property
    def sandbox(self) -> str:
        """What this butler's runtimes run in: ``"bwrap"`` (jailed) or ``"none"``."""
        return self._sandbox

    @property
    def session_tokens(self) -> SessionTokens:
        """The capability tokens of this butler's running sessions (the server resolves them)."""
        return self._lifecycle.tokens

    @property
    def completions(self) -> CompletionWriter:
        """Outcomes not yet in the database: replayed at start, flushed by :meth:`drain`."""
        return self._lifecycle.completions

    def sweep(self) -> list[Path]:
        """Remove workspaces and jail folders left by a crashed daemon, and old session homes."""
        swept = sweep_leftovers(self._runs.workspace_prefix) + prune_homes(self.config)
        return swept + sweep_jail_folders() + sweep_warm_homes(butler_dir(self.config) / "homes")

    @property
    def running(self) -> int:
        """Sessions holding a slot now."""
        return self._admission.running

    @property
    def waiting(self) -> int:
        """Sessions admitted and waiting for a slot."""
        return self._admission.waiting

    @property
    def accepting(self) -> bool:
        """False once the butler drains: every new trigger is refused."""
        return self._admission.accepting

    @property
    def waiting_for_database(self) -> int:
        """Sessions holding a slot that wait for the database to come back before they run."""
        return self._lifecycle.waiting_for_database

    @property
    def in_flight(self) -> int:
        return self.running + self.waiting

    @property
    def slot_free(self) -> bool:
        """A session admitted now would run without waiting for a slot."""
        return self._admission.free

    async def trigger(
        self,
        request: TriggerRequest,
        progress: ProgressSink | None = None,
        *,
        background: bool = False,
    ) -> SpawnerResult:
        """Run one session to its end and return its result; never raises for a failure.

        A session asking (source ``trigger``) while no slot is free would wait on its
        own slot: its session is queued and the answer says so at once (:func:`queued`),
        unless ``background`` says no session waits on this call (a schedule's task).
        """
        waits_on_itself = request.trigger_source == "trigger" and not self.slot_free
        try:
            sid, task = await self.start(request, progress)
        except Rejected as exc:
            return rejected(str(exc))
        if waits_on_itself and not background:
            return queued(sid)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                return rejected(SHUTDOWN)
            task.cancel(CLIENT_GONE)
            raise

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
                watched = self.activity.watch(sid, progress)
                end.result = await self._run(session, watched, place)
        finally:
            self.activity.close(sid)

    async def _run(
        self, session: Session, progress: ProgressSink | None, place: Place
    ) -> RuntimeResult:
        """The session's runtime run here, or on a worker (which names itself on the row)."""
        if place == "here":
            return await self._run_here(session, progress)
        here = (self._placement, lambda: self._run_here(session, progress))
        either = here if place == "either" else None
        return await run_on_worker(self.config, self._jobs, self.session_tokens, session, either)

    async def _run_here(self, session: Session, progress: ProgressSink | None) -> RuntimeResult:
        """In this daemon: each runtime process group goes on the row, so that a daemon
        killed outright leaves nothing the next start cannot find (orphans.py)."""
        record = recorder(functools.partial(self._lifecycle.annotate, session.id))
        return await self._runs.run(session, self._lifecycle.tokens, progress, record)

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
        """A session's task, which a drain waits for."""
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def interactive(
        self, request: InteractiveRequest
    ) -> contextlib.AbstractAsyncContextManager[InteractiveStart]:
        """Start an interactive session: recorded and prepared; the block places its runtime.

        See :meth:`InteractiveSessions.start`; the runtime holds no session slot.
        """
        return self._interactive.start(request)

    async def adopt_interactive(self, session_id: str, folder: Path) -> None:
        """An interactive session that outlived a daemon restart runs again, here."""
        await self._interactive.adopt(session_id, folder)

    async def finish_interactive(
        self, row: dict[str, Any], folder: Path, end: InteractiveEnd
    ) -> SessionOutcome:
        """Complete the interactive session of ``row``, whose runtime ended as ``end`` says."""
        return await self._interactive.finish(row, folder, end)

    def stop_accepting(self) -> None:
        """Refuse every new trigger from now on."""
        self._admission.accepting = False

    async def drain(self, timeout: float = 30.0) -> int:
        """Wait for in-flight sessions; cancel those still running after ``timeout``, and
        return how many were cancelled."""
        self.stop_accepting()
        still: set[asyncio.Task[SpawnerResult]] = set()
        if self._tasks:
            _, still = await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in still:
            task.cancel(SHUTDOWN)
        if still:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(still, timeout=TIMEOUT_GRACE_S)
        # completions the database has not taken yet stay journalled for the next start
        await self._lifecycle.completions.flush(TIMEOUT_GRACE_S)
        await self._jobs.close()
        if self._pool is not None:
            await self._pool.close()
        return len(still)
