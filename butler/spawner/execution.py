"""A session's runtime run on this machine: its workspace, its invocation, its jail, its limit.

The one sequence of steps every headless session's runtime takes, whether the
daemon runs it (:class:`~butler.spawner.spawner.Spawner`) or a ``butler worker``
does (:mod:`.worker_runs`), given the :class:`~butler.spawner.session.Session`
whole: the butler's memory for its system prompt, a private workspace with the
session's attachments placed in it, :func:`build_invocation` with the
session's token, the jail (bubblewrap and its egress proxy,
:func:`butler.spawner.sandboxing.jailed`), the adapter and its time limit with
a grace to clean up. One function, so a change to how a runtime is run is made
once and holds on every machine. What differs between the two callers is only
where the token comes from (issued here, or given by the daemon) and who is
told of the runtime's process (the row, or the worker's ledger): both are the
caller's. Where the runtime calls its butler from is the machine's
(:attr:`Execution.base_url`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from butler.config import ButlerConfig
from butler.runtimes.base import ProgressSink, RuntimeAdapter, RuntimeFailure, RuntimeResult
from butler.runtimes.registry import get_adapter
from butler.sandbox.pool import JailPool
from butler.spawner.episodes import memory_context
from butler.spawner.homes import discard_home
from butler.spawner.invocation import TokenIssuer, build_invocation
from butler.spawner.sandboxing import jailed, sandbox_mode
from butler.spawner.session import Session
from butler.spawner.workspace import Workspace
from butler.store.credentials import CredentialStore
from butler.store.db import Database
from butler.store.memory import Memory, PostgresMemory
from butler.store.sessions import SessionStore

#: Extra seconds the spawner grants an adapter past its own timeout to clean up.
TIMEOUT_GRACE_S = 10.0


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
    #: Where the runtime calls its butler from this machine: None in the daemon (its own
    #: address), ``config.callback_url`` on a worker (across the network).
    base_url: str | None = None

    @classmethod
    def over(cls, config: ButlerConfig, db: Database, *, base_url: str | None = None) -> Execution:
        """How ``config``'s sessions run on this machine, over its open database: its
        runtime's adapter, its stores and its jail mode, assembled the one way for its
        daemon (:func:`butler.daemon.assemble`, under the spawner) and for a worker
        (whose runtimes call the butler at ``base_url``). Credentials are read from the
        database, then from this process's environment as it is when a session starts."""
        return cls(
            config,
            get_adapter(config.runtime.type, config.runtime, config.roster_dir),
            CredentialStore(db),
            SessionStore(db, config.butler.max_output_bytes),
            PostgresMemory(
                db, config.butler.memory.max_episodes, config.butler.memory.recall_senders
            ),
            sandbox_mode(config),
            base_url=base_url,
        )

    @property
    def workspace_prefix(self) -> str:
        return f"butler_{self.config.name}_"

    def _writes_own_folder(self, session: Session) -> bool:
        """Whether the session may write its butler folder: the owner's may (the web
        chat's too); one a chat's sender steers (:attr:`Session.tenant`) reads it only,
        unless the owner set ``[butler.channels] sender_scope = "butler"``."""
        return session.tenant is None or self.config.butler.channels.sender_scope == "butler"

    async def run(
        self,
        session: Session,
        tokens: TokenIssuer,
        progress: ProgressSink | None = None,
        on_process: Callable[[int], None] | None = None,
    ) -> RuntimeResult:
        """Run ``session``'s runtime here, with its token from ``tokens``; its result, or
        :class:`RuntimeFailure` with what it produced. ``on_process`` is told each
        process group the runtime starts (the caller records it where a later start on
        this machine finds it)."""
        memory = await memory_context(self.config, self.memory, session.id)
        own_folder = self._writes_own_folder(session)
        workspace = Workspace(self.workspace_prefix).create()
        try:
            placed = await asyncio.to_thread(workspace.place, session.files)
            invocation = await build_invocation(
                self.config,
                self.adapter,
                self.credentials,
                session,
                tokens,
                cwd=self.config.config_dir,
                workdir=workspace.path,
                placed=placed,
                memory=memory,
                base_url=self.base_url,
            )
            invocation = dataclasses.replace(invocation, on_process=on_process)
            workspace.write(self.adapter.mcp_config_files(invocation))
            async with jailed(
                self.config,
                self.sandbox,
                invocation,
                label=session.id,
                writable=session.writable,
                # What the jail's proxy refused goes on the session's row.
                record=functools.partial(self.sessions.update_metadata, uuid.UUID(session.id)),
                pool=self.pool,
                own_folder=own_folder,
            ) as invocation:
                try:
                    async with asyncio.timeout(invocation.timeout_s + TIMEOUT_GRACE_S):
                        return await self.adapter.invoke(invocation, progress)
                except TimeoutError:
                    raise RuntimeFailure(f"timeout after {invocation.timeout_s:g} s") from None
        finally:
            if not self.adapter.supports_resume:  # nothing will read its home again
                discard_home(self.config, session.id)
            # In a thread: removing a folder a jail's mount namespace held takes milliseconds
            # while the kernel tears that namespace down, which the event loop (every other
            # session and tool call) should not wait for. Done even if this wait is cancelled.
            await asyncio.to_thread(workspace.remove)
