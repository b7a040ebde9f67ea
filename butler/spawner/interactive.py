"""Interactive sessions: a runtime in a terminal the caller holds, on the one session path.

A builder's runtime runs in a tmux pane and outlives the call that started
it, and even its daemon; otherwise it is a session like any other, and the
spawner starts, adopts and finishes it through the same steps: its row is
created under a ``butler.session`` span (its trace id recorded, the runtime
given ``TRACEPARENT``), :func:`build_invocation` gives it the environment
allow-list, a private home and the MCP endpoint with its session token, the
one way into the jail jails it, and its config files and launcher are
written here. What the caller keeps is the terminal: it makes the runtime's
working folder, runs the launcher (:attr:`Launch.argv`, no secret in it)
and says, when it sees the runtime gone, how it ended.

The jails of these sessions outlive a call, so this module keeps them, by
session id, until the session is finished; the session's private folder
keeps what a restarted daemon needs to adopt it (``survivors``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Status, StatusCode

from butler.config import ButlerConfig
from butler.errors import UserError
from butler.paths import butler_dir
from butler.runtimes.base import Command, Invocation, RuntimeAdapter, RuntimeFailure, Transcript
from butler.runtimes.launcher import TERMINAL_VARS, write_launcher
from butler.runtimes.mcp_config import ConfigFileError, write_files
from butler.sandbox import Jail
from butler.security.private_files import private_folder
from butler.spawner import survivors
from butler.spawner.chains import ChainPlace, Chains
from butler.spawner.endings import Exit, end_of, interactive_outcome, now_iso
from butler.spawner.invocation import build_invocation
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.runtime_choice import adapter_for
from butler.spawner.sandboxing import jail_invocation
from butler.spawner.session import Session
from butler.store.credentials import CredentialStore
from butler.store.sessions import SessionOutcome
from butler.telemetry import trace_id_of, tracer

log = logging.getLogger(__name__)

#: In an interactive session's folder: the runtime's own subfolder (the jail's workspace).
#: The launch spec, exit record and restart notes lie beside it, out of the runtime's reach.
RUNTIME_DIR = "run"


@dataclass(frozen=True)
class InteractiveRequest:
    """One request for a session whose runtime runs in the caller's terminal."""

    prompt: str
    #: Where the runtime works (a builder's worktree); the caller makes it inside the block.
    cwd: Path
    #: The session's private folder, made afresh: launch spec, exit record, restart notes.
    folder: Path
    trigger_source: str = "external"
    session_type: str = "shell"
    metadata: dict[str, Any] = field(default_factory=dict)
    #: Another runtime type than the butler's own (a builder's ``--runtime``).
    runtime: str | None = None
    #: Text appended to the butler's system prompt (a builder's role).
    role: str = ""
    #: Folders the runtime may write besides its own (a builder's worktree and git folder).
    writable: tuple[Path, ...] = ()
    #: The running session that asked for it: the new session is its child, in its chain.
    caller_session_id: str | None = None

    def session(self, chain: ChainPlace | None = None) -> Session:
        """The session this request asks for, as the session path describes every one:
        the asking session's child, at its ``chain`` place, when a session asked."""
        chain = chain or ChainPlace()
        return Session(
            id=str(uuid.uuid4()),
            prompt=self.prompt,
            source=self.trigger_source,
            type=self.session_type,
            metadata=dict(self.metadata),
            parent_id=self.caller_session_id,
            root_id=str(chain.root_id) if chain.root_id else None,
            depth=chain.depth,
            writable=self.writable,
            tenant=chain.tenant,
        )


@dataclass(frozen=True)
class Launch:
    """What the caller's terminal runs, and what the runtime's TUI needs typed into it."""

    #: The launcher: paths only, never a secret (every local user reads argv).
    argv: list[str]
    #: The runtime's command: its ``typed_prompt`` and the ``ready`` texts of its TUI.
    command: Command


@dataclass(frozen=True)
class InteractiveEnd:
    """How the caller saw an interactive session end."""

    #: What its terminal showed last: the session's output.
    output: str = ""
    #: The launcher's exit record; None when the runtime's end was not seen.
    exit: Exit | None = None
    #: Why someone stopped it, when someone did: the session is then ``cancelled``.
    stopped: str | None = None


class InteractiveStart:
    """An interactive session being started: recorded, its runtime not yet placed."""

    def __init__(
        self, session_id: str, folder: Path, adapter: RuntimeAdapter, invocation: Invocation
    ) -> None:
        self.session_id = session_id
        self._folder = folder
        self._adapter = adapter
        self._invocation = invocation
        self.pid: int | None = None

    async def launch(self) -> Launch:
        """Write the runtime's config files and launcher; call it once its ``cwd`` exists.

        The command is built now, not before: a runtime reads its project's config.
        """
        try:
            return await asyncio.to_thread(self._launch)
        except (RuntimeFailure, ConfigFileError) as exc:
            raise UserError(str(exc)) from None

    def _launch(self) -> Launch:
        invocation = self._invocation
        command = interactive_command(invocation, self._adapter)
        # The home and the working folder are the runtime's to write: no link in them
        # is followed (a resumed home may hold one it left).
        private_folder(invocation.home)
        write_files(command.files, (invocation.home, invocation.workdir))
        argv = command.argv
        if invocation.sandbox is not None:
            # Variables naming the home are set again inside, where the jail shows it.
            argv = invocation.sandbox.wrap(argv, env=command.env, interactive=True)
        script = write_launcher(
            self._folder, argv, command.env, passthrough=TERMINAL_VARS, supervise=True
        )
        return Launch([str(script)], command)

    def runs_as(self, pid: int | None) -> None:
        """The process that runs the launcher (a pane's): its jail's folder becomes its."""
        self.pid = pid


def interactive_command(invocation: Invocation, adapter: RuntimeAdapter) -> Command:
    """``adapter``'s runtime as a terminal session, with its MCP config; RuntimeFailure if none."""
    command = adapter.interactive_command(invocation)
    files = {**adapter.mcp_config_files(invocation), **command.files}
    return replace(command, files=files)


class InteractiveSessions:
    """The interactive sessions of one butler, and the jails they hold while they run."""

    def __init__(
        self,
        config: ButlerConfig,
        adapter: RuntimeAdapter,
        credentials: CredentialStore,
        lifecycle: SessionLifecycle,
        sandbox: str,
        chains: Chains,
    ) -> None:
        self._config = config
        self._adapter = adapter
        self._credentials = credentials
        self._lifecycle = lifecycle
        self._sandbox = sandbox
        #: The butler's chains: one asked for by a session counts in its caller's chain.
        self._chains = chains
        #: Jails of running interactive sessions, by session id.
        self._jails: dict[str, Jail] = {}

    @contextlib.asynccontextmanager
    async def start(self, request: InteractiveRequest) -> AsyncIterator[InteractiveStart]:
        """Record and prepare one session; the block places its runtime in a terminal.

        A runtime without a terminal mode is refused (:class:`UserError`) before
        any row exists, as is one past its caller's chain bounds (:class:`Rejected`,
        spawner/chains.py): a session's builder, and whatever that builder starts,
        count in the chain of the session that asked. When the block raises, the
        session is completed ``failed`` with the reason and its jail released; when
        it ends, the session runs.
        """
        adapter = adapter_for(self._config, self._adapter, request.runtime)
        attributes = {
            "butler.name": self._config.name,
            "butler.trigger_source": request.trigger_source,
            "butler.runtime": adapter.type_name,
            "butler.interactive": True,
        }
        with tracer().start_as_current_span("butler.session", attributes=attributes) as span:
            async with self._chains.admit(request.caller_session_id) as place:
                session = request.session(place)
                new = self._lifecycle.new(session, trace_id_of(span), adapter)
                sid = session.id
                span.set_attribute("butler.session_id", sid)
                invocation = await self._prepare(request, session, adapter)
                await self._lifecycle.create(new, otel_context.get_current())
            started = InteractiveStart(sid, request.folder, adapter, invocation)
            try:
                yield started
            except BaseException as exc:
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                await self._failed(sid, request.folder, f"spawn failed: {exc}", adapter)
                raise
            survivors.hand_over(self._jails.get(sid), started.pid)
            await self._lifecycle.running(sid)

    async def _prepare(
        self, request: InteractiveRequest, session: Session, adapter: RuntimeAdapter
    ) -> Invocation:
        """Folder, invocation and jail of the runtime; nothing is left when it fails."""
        session_id = session.id
        shutil.rmtree(request.folder, ignore_errors=True)  # a pruned builder's leftovers
        private_folder(request.folder / RUNTIME_DIR)
        try:
            invocation = await build_invocation(
                self._config,
                adapter,
                self._credentials,
                session,
                self._lifecycle.tokens,
                cwd=request.cwd,
                workdir=request.folder / RUNTIME_DIR,
                role=request.role,
            )
            if self._sandbox == "bwrap":
                invocation, self._jails[session_id] = await jail_invocation(
                    self._config,
                    invocation,
                    label=session_id,
                    writable=request.writable,
                    runtime=adapter.config,
                )
            tokens, jail = self._lifecycle.tokens, self._jails.get(session_id)
            survivors.remember(request.folder, session_id, tokens, jail)
            interactive_command(invocation, adapter)  # a runtime with no terminal mode refuses
        except BaseException as exc:
            await self._discard(session_id, request.folder)
            if isinstance(exc, RuntimeFailure):
                raise UserError(str(exc)) from None
            raise
        return invocation

    async def _discard(self, session_id: str, folder: Path) -> None:
        """Take back what a start that recorded nothing made: token, jail, folder."""
        self._lifecycle.tokens.revoke(session_id)
        await self._release(session_id)
        shutil.rmtree(folder, ignore_errors=True)

    async def _failed(
        self, session_id: str, folder: Path, error: str, adapter: RuntimeAdapter
    ) -> None:
        """Record a start that failed once its row existed, and take back what it made."""
        await self._release(session_id)
        shutil.rmtree(folder, ignore_errors=True)
        outcome = SessionOutcome("failed", False, "", error, [], 0)
        await self._lifecycle.annotate(session_id, {"ended_at": now_iso()})
        await self._lifecycle.complete(session_id, outcome, runtime=adapter.type_name)

    async def adopt(self, session_id: str, folder: Path) -> None:
        """A session that outlived a daemon restart (which failed its row) runs again here:
        its session token valid again, its jail's proxy started again."""
        if session_id not in self._jails:
            jail = await survivors.restore(folder, session_id, self._lifecycle.tokens, session_id)
            if jail is not None:
                # The restored jail knows its proxy only: its end looks after the butler
                # folder as a started one's does (the daemon's start looked already).
                butler_folder = self._config.config_dir
                policy = replace(
                    jail.policy, writable=(butler_folder,), held=(butler_folder / ".git",)
                )
                self._jails[session_id] = replace(jail, policy=policy)
        await self._lifecycle.running(session_id)
        await self._lifecycle.annotate(session_id, {"adopted_at": now_iso()})

    async def finish(
        self, row: dict[str, Any], folder: Path, end: InteractiveEnd
    ) -> SessionOutcome:
        """Complete the session of ``row``, whose runtime ended as ``end`` says."""
        session_id = str(row["id"])
        status, error = end_of(end.exit)
        if end.stopped:
            status, error = "cancelled", end.stopped
        used = await asyncio.to_thread(self._transcript, row, folder / RUNTIME_DIR)
        outcome = interactive_outcome(row, status, error, end.output, used)
        exit_record = end.exit or {}
        # How it ended is written first, so whoever sees the row completed sees why.
        await self._lifecycle.annotate(
            session_id,
            {
                "ended_at": now_iso(),
                "exit_status": exit_record.get("status"),
                "signal": exit_record.get("signal"),
                **await self._release(session_id, folder),
            },
        )
        outcome = await self._lifecycle.complete(session_id, outcome, runtime=row["runtime"])
        log.info("interactive session finished", extra={"session_id": session_id})
        return outcome

    def _transcript(self, row: dict[str, Any], workdir: Path) -> Transcript | None:
        """What an ended session's runtime used, from its CLI's own files (None if unknown)."""
        try:
            adapter = adapter_for(self._config, self._adapter, row["runtime"])
            home = butler_dir(self._config) / "homes" / str(row["id"])
            return adapter.transcript(home, workdir)
        except Exception:  # usage is worth having, never worth losing the row for
            log.exception("could not read the usage of session %s", row["id"])
            return None

    async def _release(self, session_id: str, folder: Path | None = None) -> dict[str, Any]:
        """Stop the egress of a session's jail; what it refused and the repositories its
        runtime left, for the row. A jail no daemon held (its session ended unadopted)
        only has its folder removed."""
        jail = self._jails.pop(session_id, None)
        if jail is None:
            if folder is not None:
                await asyncio.to_thread(survivors.forget, folder)
            return {}
        await jail.close()
        return {"sandbox": jail.summary()} if jail.noteworthy else {}
