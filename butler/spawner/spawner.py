"""The spawner: a trigger becomes one recorded, locked-down runtime session.

Runtime-agnostic: it knows runtimes only through :class:`RuntimeAdapter`. For
each trigger it admits or refuses (:mod:`.admission`), records the session
before the runtime starts and completes it whatever happened
(:mod:`.lifecycle`), builds the run (:mod:`.invocation`) in a private
workspace, and runs the adapter under a time limit. Builders start their
interactive sessions through the same two modules, via :meth:`Spawner.invocation`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from dataclasses import replace
from pathlib import Path

from opentelemetry import context as otel_context
from opentelemetry.trace import Status, StatusCode

from butler.config import ButlerConfig
from butler.errors import ButlerError, Rejected, SessionNotFound
from butler.preflight import explain
from butler.runtimes.base import (
    Command,
    Invocation,
    ProgressSink,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeResult,
)
from butler.runtimes.process import PROCESS_STARTED
from butler.sandbox import Jail, resolve_mode
from butler.sandbox.folders import sweep_jail_folders
from butler.security.session_tokens import SessionTokens
from butler.spawner.admission import Admission, Reservation, validate_trigger_source
from butler.spawner.homes import discard_home, prune_homes
from butler.spawner.invocation import InvocationRequest, build_invocation
from butler.spawner.ledger import ToolCallLedger
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.orphans import recorder
from butler.spawner.request import TriggerRequest
from butler.spawner.result import SpawnerResult, outcome_of, rejected, spawner_result
from butler.spawner.sandboxing import jailed
from butler.spawner.usage import TOTALS_KEY, own_share, totals
from butler.spawner.workspace import Workspace, sweep_leftovers
from butler.store.credentials import CredentialStore
from butler.store.memory import Memory
from butler.store.sessions import SessionOutcome, SessionStore
from butler.telemetry import trace_id_of, tracer

log = logging.getLogger(__name__)

#: Why a session ended cancelled, for the caller and the row.
SHUTDOWN = "cancelled: the butler is shutting down"
CLIENT_GONE = "cancelled by its client"
#: Extra seconds the spawner grants an adapter past its own timeout to clean up.
TIMEOUT_GRACE_S = 10.0


class Spawner:
    """Runs triggers of one butler through its runtime adapter."""

    def __init__(
        self,
        config: ButlerConfig,
        adapter: RuntimeAdapter,
        sessions: SessionStore,
        credentials: CredentialStore,
        ledger: ToolCallLedger | None = None,
        memory: Memory | None = None,
    ) -> None:
        self.config = config
        self.adapter = adapter
        self.sessions = sessions
        self.credentials = credentials
        self.ledger = ledger or ToolCallLedger()
        self.memory = memory
        rt = config.runtime
        self.admission = Admission(rt.max_concurrent_sessions, rt.max_queued_sessions)
        self._tasks: set[asyncio.Task[SpawnerResult]] = set()
        self.lifecycle = SessionLifecycle(
            config, sessions, self.ledger, adapter.type_name, lambda: self.admission.waiting
        )
        #: What runtimes run in: "bwrap" (jailed) or "none"; decided once, at start.
        self.sandbox = resolve_mode(config.butler.sandbox, f"{config.config_dir / 'butler.toml'}:")
        #: Jails that outlive one call (builders' terminal sessions), by session id.
        self.jails: dict[str, Jail] = {}

    @property
    def session_tokens(self) -> SessionTokens:
        """The capability tokens of this butler's running sessions (the server resolves them)."""
        return self.lifecycle.tokens

    @property
    def workspace_prefix(self) -> str:
        return f"butler_{self.config.name}_"

    def sweep(self) -> list[Path]:
        """Remove workspaces and jail folders left by a crashed daemon, and old session homes."""
        swept = sweep_leftovers(self.workspace_prefix) + prune_homes(self.config.name)
        return swept + sweep_jail_folders()

    @property
    def in_flight(self) -> int:
        return self.admission.running + self.admission.waiting

    async def trigger(
        self, request: TriggerRequest, progress: ProgressSink | None = None
    ) -> SpawnerResult:
        """Run one session to its end and return its result; never raises for a failure."""
        try:
            _, task = await self.start(request, progress)
        except Rejected as exc:
            return rejected(str(exc))
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
        reservation = self.admission.reserve(request.trigger_source)
        try:
            parent = await self._parent(request.resume_session_id)
        except BaseException:
            reservation.release()
            raise
        recorded: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._session(request, parent, progress, recorded, reservation))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await asyncio.wait([recorded, task], return_when=asyncio.FIRST_COMPLETED)
        if not recorded.done():
            task.result()  # the session failed before it was recorded: raise why
            raise ButlerError("session ended before it was recorded")
        return recorded.result(), task

    async def _parent(self, session_id: str | None) -> dict | None:
        if session_id is None:
            return None
        row = await self.sessions.get(session_id)
        if row is None:
            raise SessionNotFound(f"session {session_id} not found; expected a recorded id")
        if not row.get("runtime_session_id"):
            raise SessionNotFound(
                f"session {session_id} has no runtime session to resume "
                f"(status {row['status']}); expected a session that ran"
            )
        if row["runtime"] != self.adapter.type_name or not self.adapter.supports_resume:
            raise SessionNotFound(
                f"session {session_id} ran on {row['runtime']}; this butler's runtime "
                f"{self.adapter.type_name} cannot resume it"
            )
        return row

    async def _session(
        self,
        request: TriggerRequest,
        parent: dict | None,
        progress: ProgressSink | None,
        recorded: asyncio.Future[str],
        reservation: Reservation,
    ) -> SpawnerResult:
        try:
            return await self._recorded_session(request, parent, progress, recorded, reservation)
        finally:
            reservation.release()

    async def _recorded_session(
        self,
        request: TriggerRequest,
        parent: dict | None,
        progress: ProgressSink | None,
        recorded: asyncio.Future[str],
        reservation: Reservation,
    ) -> SpawnerResult:
        with tracer().start_as_current_span(
            "butler.session",
            attributes={
                "butler.name": self.config.name,
                "butler.trigger_source": request.trigger_source,
                "butler.runtime": self.adapter.type_name,
            },
        ) as span:
            metadata, parent_id = dict(request.metadata), parent["id"] if parent else None
            if request.caller_session_id:  # the session that asked is the parent
                if parent_id:
                    metadata["resumed_session_id"] = parent_id
                parent_id = request.caller_session_id
            new = self.lifecycle.new(
                request.full_prompt(),
                request.trigger_source,
                request.session_type,
                metadata,
                parent_id=parent_id,
                trace_id=trace_id_of(span),
                model=request.model,
            )
            span.set_attribute("butler.session_id", str(new.id))
            sid = await self.lifecycle.create(new, otel_context.get_current())
            recorded.set_result(sid)
            outcome = await self._execute(sid, request, parent, progress, reservation)
            if outcome.error:
                span.set_status(Status(StatusCode.ERROR, outcome.error))
            if outcome.success:
                await self._remember(new.id, request.full_prompt(), outcome.output)
            return spawner_result(sid, outcome)

    async def _execute(
        self,
        sid: str,
        request: TriggerRequest,
        parent: dict | None,
        progress: ProgressSink | None,
        reservation: Reservation,
    ) -> SessionOutcome:
        """Wait for a slot, run the runtime, and record the outcome whatever happens."""
        started = time.monotonic()
        result = RuntimeResult()
        status, error = "failed", None
        try:
            if progress:
                await progress("queued")
            async with self.admission.slot(reservation):
                await self.lifecycle.running(sid)
                started = time.monotonic()
                if progress:
                    await progress("running")
                result = await self._run(request, sid, parent, progress)
                result = await self._own_share(sid, result, parent)
            status = "succeeded"
        except RuntimeFailure as exc:
            result, error = exc.partial, explain(self.config, str(exc))
        except asyncio.CancelledError as exc:
            # whoever cancelled says why; a bare cancel is the drain's
            reason = exc.args[0] if exc.args and isinstance(exc.args[0], str) else SHUTDOWN
            status, error = "cancelled", reason
            raise
        except ButlerError as exc:
            error = str(exc)
        except Exception as exc:
            log.exception("session %s crashed", sid)
            error = f"internal error: {type(exc).__name__}: {exc}"
        finally:
            if not self.adapter.supports_resume:  # nothing will read its home again
                discard_home(self.config.name, sid)
            outcome = await self.lifecycle.complete(
                sid, outcome_of(status, error, result, started), result.tool_calls
            )
        return outcome

    async def _run(
        self,
        request: TriggerRequest,
        sid: str,
        parent: dict | None,
        progress: ProgressSink | None,
    ) -> RuntimeResult:
        memory = await self._memory_context()
        with Workspace(self.workspace_prefix) as workspace:
            placed = await asyncio.to_thread(workspace.place, request.files)
            invocation = await build_invocation(
                self.config,
                self.adapter,
                self.credentials,
                InvocationRequest(
                    session_id=sid,
                    prompt=request.full_prompt() + placed,
                    cwd=self.config.config_dir,
                    workdir=workspace.path,
                    memory=memory,
                    parent_id=parent["id"] if parent else None,
                    resume=parent["runtime_session_id"] if parent else None,
                    max_turns=request.max_turns,
                    timeout_s=request.timeout_s,
                    model=request.model,
                ),
                self.session_tokens,
            )
            workspace.write(self.adapter.mcp_config_files(invocation))
            PROCESS_STARTED.set(recorder(functools.partial(self.lifecycle.annotate, sid)))
            record = functools.partial(self.sessions.update_metadata, uuid.UUID(sid))
            async with jailed(
                self.config,
                self.sandbox,
                invocation,
                label=sid,
                writable=request.writable,
                record=record,
            ) as invocation:
                try:
                    async with asyncio.timeout(invocation.timeout_s + TIMEOUT_GRACE_S):
                        return await self.adapter.invoke(invocation, progress)
                except TimeoutError:
                    raise RuntimeFailure(f"timeout after {invocation.timeout_s:g} s") from None

    async def _own_share(
        self, sid: str, result: RuntimeResult, parent: dict | None
    ) -> RuntimeResult:
        fields = self.adapter.cumulative_on_resume
        if fields:
            await self.lifecycle.annotate(sid, {TOTALS_KEY: totals(result, fields)})
        return own_share(result, fields, parent)

    async def invocation(
        self, request: InvocationRequest, adapter: RuntimeAdapter | None = None
    ) -> Invocation:
        """A runtime's invocation (this butler's by default) for a builder's session."""
        return await build_invocation(
            self.config, adapter or self.adapter, self.credentials, request, self.session_tokens
        )

    def interactive_command(
        self, invocation: Invocation, adapter: RuntimeAdapter | None = None
    ) -> Command:
        """A runtime (this butler's by default) as a terminal session; RuntimeFailure if none."""
        adapter = adapter or self.adapter
        command = adapter.interactive_command(invocation)
        files = {**adapter.mcp_config_files(invocation), **command.files}
        return replace(command, files=files)

    async def _memory_context(self) -> str | None:
        if self.memory is None or not self.config.butler.memory.enabled:
            return None
        try:
            return await self.memory.fetch_memory_context()
        except Exception as exc:
            log.warning("memory context unavailable, going on without it: %s", exc)
            return None

    async def _remember(self, session_id: uuid.UUID, prompt: str, output: str) -> None:
        if self.memory is None or not self.config.butler.memory.enabled:
            return
        try:
            await self.memory.store_session_episode(session_id, prompt, output)
        except Exception as exc:
            log.warning("could not store the session episode: %s", exc)

    def stop_accepting(self) -> None:
        """Refuse every new trigger from now on."""
        self.admission.accepting = False

    async def drain(self, timeout: float = 30.0) -> int:
        """Wait for in-flight sessions; cancel those still running after ``timeout``.

        Returns how many sessions were cancelled.
        """
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
        await self.lifecycle.completions.flush(TIMEOUT_GRACE_S)
        return len(still)
