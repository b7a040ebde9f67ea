"""The spawner: a trigger becomes one recorded, locked-down runtime session.

Runtime-agnostic: it knows runtimes only through :class:`RuntimeAdapter`. It is
what the rest of butler calls: a trigger is admitted or refused at once, its
session described once, recorded before its runtime starts, run here or on a
worker and completed whatever happened (:mod:`.headless`); an interactive
session (a builder's runtime in tmux) is started, adopted and finished through
the same lifecycle (:mod:`.interactive`). Both share one :class:`SessionLifecycle`
(the rows, the tokens, the completion journal) and one admission; a drain ends
them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from pathlib import Path
from typing import Any

from butler.errors import Rejected
from butler.paths import butler_dir
from butler.runtimes.base import ProgressSink
from butler.sandbox.folders import sweep_jail_folders
from butler.sandbox.pool import sweep_warm_homes
from butler.security.session_tokens import SessionTokens
from butler.spawner.activity import Activity
from butler.spawner.admission import Admission
from butler.spawner.chains import Chains
from butler.spawner.completions import CompletionWriter
from butler.spawner.execution import TIMEOUT_GRACE_S, Execution
from butler.spawner.headless import HeadlessSessions
from butler.spawner.homes import prune_homes
from butler.spawner.interactive import (
    InteractiveEnd,
    InteractiveRequest,
    InteractiveSessions,
    InteractiveStart,
)
from butler.spawner.ledger import ToolCallLedger
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.request import TriggerRequest
from butler.spawner.result import (
    CLIENT_GONE,
    SHUTDOWN,
    SpawnerResult,
    queued,
    rejected,
)
from butler.spawner.sandboxing import open_pool
from butler.spawner.workspace import sweep_leftovers
from butler.store.sessions import SessionOutcome


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
        self._lifecycle = SessionLifecycle(
            config, sessions, self.ledger, adapter.type_name, lambda: self._admission.waiting
        )
        #: What runtimes run in: "bwrap" (jailed) or "none"; decided once, at start.
        self._sandbox = runs.sandbox
        #: The chains of sessions asked for by sessions, headless or interactive.
        chains = Chains(config, sessions)
        #: Warm jails this butler's sessions take theirs from; closed by :meth:`drain`.
        self._pool = open_pool(config, self._sandbox)
        self._headless = HeadlessSessions(
            dataclasses.replace(runs, pool=self._pool),
            self._lifecycle,
            self._admission,
            chains,
            self.activity,
        )
        self._interactive = InteractiveSessions(
            config, adapter, self.credentials, self._lifecycle, self._sandbox, chains
        )
        #: Sessions an earlier daemon handed to workers, taken over by recovery.py.
        self.handed_over = self._headless.handed_over

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
        prefix = self._headless.runs.workspace_prefix
        swept = sweep_leftovers(prefix) + prune_homes(self.config)
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
        return await self._headless.start(request, progress)

    def follow_handed_over(self) -> None:
        """Wait again for the sessions an earlier daemon handed to workers (taken over by
        :func:`~butler.spawner.recovery.recover`), each holding a slot while its job is
        in the queue, and record how each ended. Called once the butler serves."""
        self._headless.follow_handed_over()

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
        if self._headless.tasks:
            _, still = await asyncio.wait(set(self._headless.tasks), timeout=timeout)
        for task in still:
            task.cancel(SHUTDOWN)
        if still:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait(still, timeout=TIMEOUT_GRACE_S)
        # completions the database has not taken yet stay journalled for the next start
        await self._lifecycle.completions.flush(TIMEOUT_GRACE_S)
        await self._headless.close()
        if self._pool is not None:
            await self._pool.close()
        return len(still)
