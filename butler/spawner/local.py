"""A session's runtime run on this machine: its workspace, its invocation, its jail, its limit.

The spawner has recorded the session and holds its slot; this builds the run
(:mod:`.invocation`) in a private workspace (:mod:`.workspace`), starts it in
the jail (:mod:`.sandboxing`) and gives the adapter its time limit and a grace
to clean up. A session handed to a worker runs through :mod:`.remote` instead.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from dataclasses import dataclass

from butler.config import ButlerConfig
from butler.runtimes.base import ProgressSink, RuntimeAdapter, RuntimeFailure, RuntimeResult
from butler.runtimes.process import PROCESS_STARTED
from butler.spawner.invocation import InvocationRequest, build_invocation
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.orphans import recorder
from butler.spawner.recall import memory_context
from butler.spawner.request import TriggerRequest
from butler.spawner.sandboxing import jailed
from butler.spawner.workspace import Workspace
from butler.store.credentials import CredentialStore
from butler.store.memory import Memory
from butler.store.sessions import SessionStore

#: Extra seconds the spawner grants an adapter past its own timeout to clean up.
TIMEOUT_GRACE_S = 10.0


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

    @property
    def workspace_prefix(self) -> str:
        return f"butler_{self.config.name}_"

    async def run(
        self,
        request: TriggerRequest,
        sid: str,
        parent: dict | None,
        progress: ProgressSink | None,
    ) -> RuntimeResult:
        memory = await memory_context(self.config, self.memory)
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
                self.lifecycle.tokens,
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
