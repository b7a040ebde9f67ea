"""A session's runtime run on this machine: its workspace, its invocation, its jail, its limit.

The one sequence of steps every headless session's runtime takes, whether the
daemon runs it (:mod:`.local`) or a ``butler worker`` does (:mod:`.worker_runs`):
the butler's memory for its system prompt, a private workspace with the
session's attachments placed in it, :func:`build_invocation` with the
session's token, the jail (bubblewrap and its egress proxy,
:func:`butler.spawner.sandboxing.jailed`), the adapter and its time limit with
a grace to clean up. One function, so a change to how a runtime is run is made
once and holds on every machine. What differs between the two callers is only
where the token comes from (issued here, or given by the daemon) and who is
told of the runtime's process (the row, or the worker's ledger): both are the
caller's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from dataclasses import dataclass
from pathlib import Path

from butler.config import ButlerConfig
from butler.runtimes.base import ProgressSink, RuntimeAdapter, RuntimeFailure, RuntimeResult
from butler.sandbox.pool import JailPool
from butler.spawner.invocation import InvocationRequest, TokenIssuer, build_invocation
from butler.spawner.recall import memory_context
from butler.spawner.sandboxing import jailed
from butler.spawner.workspace import SessionFile, Workspace
from butler.store.credentials import CredentialStore
from butler.store.memory import Memory
from butler.store.sessions import SessionStore
from butler.store.tenants import tenant_of

log = logging.getLogger(__name__)

#: Extra seconds the spawner grants an adapter past its own timeout to clean up.
TIMEOUT_GRACE_S = 10.0


@dataclass(frozen=True)
class SessionRun:
    """What one admitted session asks of its runtime's run."""

    session_id: str
    #: The whole prompt (the request's, with its channel's framing), before attachments.
    prompt: str
    files: tuple[SessionFile, ...] = ()
    #: Folders of this machine the runtime may write (a headless builder's worktree).
    writable: tuple[Path, ...] = ()
    parent_id: str | None = None
    resume: str | None = None
    max_turns: int | None = None
    timeout_s: float | None = None
    model: str | None = None
    #: Where the runtime calls its butler when not on the daemon's machine.
    base_url: str | None = None


@dataclass
class Execution:
    """Runs one butler's sessions on this machine, each in a workspace of its own."""

    config: ButlerConfig
    adapter: RuntimeAdapter
    credentials: CredentialStore
    sessions: SessionStore
    memory: Memory | None
    #: "bwrap" (jailed) or "none", decided once by whoever runs the sessions.
    sandbox: str
    #: Warm jails a session may take instead of starting its own (the daemon's; None on
    #: a worker, whose sessions each start their own).
    pool: JailPool | None = None

    @property
    def workspace_prefix(self) -> str:
        return f"butler_{self.config.name}_"

    async def _writes_own_folder(self, session_id: str) -> bool:
        """Whether the session may write its butler folder: the owner's may (the web
        chat's too); one a chat's sender started (and each its chain starts) reads it
        only, unless the owner set ``[butler.channels] sender_scope = "butler"``. A row
        that cannot be read counts as a sender's."""
        scope = self.config.butler.channels.sender_scope
        try:
            tenant = await tenant_of(self.sessions.db, session_id, scope)
        except Exception as exc:
            log.warning("whose session this is could not be read; its folder is read-only: %s", exc)
            return False
        return tenant is None or tenant.owner

    async def run(
        self, run: SessionRun, tokens: TokenIssuer, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        memory = await memory_context(self.config, self.memory, run.session_id)
        own_folder = await self._writes_own_folder(run.session_id)
        workspace = Workspace(self.workspace_prefix).create()
        try:
            placed = await asyncio.to_thread(workspace.place, run.files)
            invocation = await build_invocation(
                self.config,
                self.adapter,
                self.credentials,
                InvocationRequest(
                    session_id=run.session_id,
                    prompt=run.prompt + placed,
                    cwd=self.config.config_dir,
                    workdir=workspace.path,
                    memory=memory,
                    parent_id=run.parent_id,
                    resume=run.resume,
                    max_turns=run.max_turns,
                    timeout_s=run.timeout_s,
                    model=run.model,
                    base_url=run.base_url,
                ),
                tokens,
            )
            workspace.write(self.adapter.mcp_config_files(invocation))
            async with jailed(
                self.config,
                self.sandbox,
                invocation,
                label=run.session_id,
                writable=run.writable,
                # What the jail's proxy refused goes on the session's row.
                record=functools.partial(self.sessions.update_metadata, uuid.UUID(run.session_id)),
                pool=self.pool,
                own_folder=own_folder,
            ) as invocation:
                try:
                    async with asyncio.timeout(invocation.timeout_s + TIMEOUT_GRACE_S):
                        return await self.adapter.invoke(invocation, progress)
                except TimeoutError:
                    raise RuntimeFailure(f"timeout after {invocation.timeout_s:g} s") from None
        finally:
            # In a thread: removing a folder a jail's mount namespace held takes milliseconds
            # while the kernel tears that namespace down, which the event loop (every other
            # session and tool call) should not wait for. Done even if this wait is cancelled.
            await asyncio.to_thread(workspace.remove)
