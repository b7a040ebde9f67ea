"""A session's runtime run in the daemon: the spawner's side of :mod:`.execution`.

The spawner has recorded the session and holds its slot; this runs it through
the one sequence every runtime takes (:class:`.execution.Execution`: workspace,
invocation, jail, limit) with the session's token issued by the lifecycle and
each runtime process group recorded on the row, so a daemon killed outright
leaves nothing the next start cannot find. A session handed to a worker runs
through :mod:`.remote` instead.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from butler.config import ButlerConfig
from butler.runtimes.base import ProgressSink, RuntimeAdapter, RuntimeResult
from butler.runtimes.process import PROCESS_STARTED
from butler.sandbox.pool import JailPool
from butler.spawner.execution import TIMEOUT_GRACE_S, Execution, SessionRun
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.orphans import recorder
from butler.spawner.request import TriggerRequest
from butler.spawner.sandboxing import open_pool
from butler.store.credentials import CredentialStore
from butler.store.memory import Memory
from butler.store.sessions import SessionStore

__all__ = ["TIMEOUT_GRACE_S", "LocalRuns"]


@dataclass
class LocalRuns:
    """Runs one butler's sessions here, each in a workspace of its own, jailed or not."""

    config: ButlerConfig
    adapter: RuntimeAdapter
    credentials: CredentialStore
    sessions: SessionStore
    memory: Memory | None
    lifecycle: SessionLifecycle
    #: "bwrap" (jailed) or "none", decided once by the spawner.
    sandbox: str
    #: Warm jails its sessions take theirs from, if it keeps any (the spawner's drain
    #: closes them).
    pool: JailPool | None = field(init=False)
    execution: Execution = field(init=False)

    def __post_init__(self) -> None:
        self.pool = open_pool(self.config, self.sandbox)
        self.execution = Execution(
            self.config,
            self.adapter,
            self.credentials,
            self.sessions,
            self.memory,
            self.sandbox,
            self.pool,
        )

    @property
    def workspace_prefix(self) -> str:
        return self.execution.workspace_prefix

    async def run(
        self,
        request: TriggerRequest,
        sid: str,
        parent: dict | None,
        progress: ProgressSink | None,
    ) -> RuntimeResult:
        PROCESS_STARTED.set(recorder(functools.partial(self.lifecycle.annotate, sid)))
        run = SessionRun(
            session_id=sid,
            prompt=request.full_prompt(),
            files=request.files,
            writable=request.writable,
            parent_id=parent["id"] if parent else None,
            resume=parent["runtime_session_id"] if parent else None,
            max_turns=request.max_turns,
            timeout_s=request.timeout_s,
            model=request.model,
        )
        return await self.execution.run(run, self.lifecycle.tokens, progress)
