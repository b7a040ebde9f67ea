"""Create builders, follow them while they run, and list them.

A builder is recorded like every session: its row is written before anything
is created, it turns ``running`` once its tmux session exists, and it is
completed when its runtime ends. Nothing watches tmux in the background:
every read (``builder_list``, the dashboard) first refreshes the rows from
tmux, so what a person sees is current.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import signal
import uuid
from pathlib import Path
from typing import Any

from butler.builders import git, launch
from butler.builders.modes import MODES, SpawnOptions, choose_mode
from butler.builders.plan import BuilderPlan, make_plan
from butler.builders.records import builder_view, elapsed_ms, is_builder, is_live, now_iso
from butler.builders.tmux import Tmux, session_name
from butler.config import ButlerConfig
from butler.errors import ButlerError, UserError
from butler.paths import butler_dir
from butler.runtimes.base import Invocation, RuntimeFailure
from butler.spawner.environment import build_runtime_env
from butler.spawner.homes import session_home
from butler.spawner.prompt import compose_system_prompt
from butler.spawner.sandboxing import start_jail_for
from butler.spawner.spawner import Spawner, TriggerRequest
from butler.spawner.workspace import write_mcp_configs
from butler.store.sessions import NewSession, SessionOutcome, SessionStore
from butler.telemetry import current_traceparent

log = logging.getLogger(__name__)

#: One spawn at a time per butler, so an id found free is still free when it is taken.
_SPAWN_LOCKS: dict[str, asyncio.Lock] = {}
#: Rows one refresh has claimed to complete; a claim is never given back, so two
#: overlapping refreshes cannot complete one builder twice.
_FINISHING: set[str] = set()
#: How a runtime ended: ``{"status": code, "signal": number}``, one of them None.
Exit = dict[str, int | None]
#: Signals that mean someone stopped the runtime, rather than that it broke.
STOP_SIGNALS = {signal.SIGHUP, signal.SIGINT, signal.SIGTERM}
_SIGNALS = {int(s) for s in signal.Signals}
#: Lines of scrollback kept as a finished builder's output.
OUTPUT_LINES = 2000


class BuilderManager:
    """The builders of one butler: its config, spawner, session rows and tmux server."""

    def __init__(
        self,
        config: ButlerConfig,
        spawner: Spawner,
        sessions: SessionStore,
        tmux: Tmux | None = None,
    ) -> None:
        self.config = config
        self.spawner = spawner
        self.sessions = sessions
        self.tmux = tmux or Tmux()

    async def spawn(
        self, options: SpawnOptions, repo: Path, source: str = "external", headless: bool = False
    ) -> dict[str, Any]:
        """Create a builder; return its view (and, headless, the session's result)."""
        mode = choose_mode(options)
        if headless and mode == "shell":
            raise UserError("--headless needs a prompt; --shell is an interactive session only")
        root = await git.repo_root(repo)
        async with _SPAWN_LOCKS.setdefault(self.config.name, asyncio.Lock()):
            taken = await git.builder_names(root) | {b["id"] for b in await self.builders()}
            plan = make_plan(mode, options, self.config.config_dir, root, taken)
            if not headless:
                return await self._interactive(plan, source)
            await git.add_worktree(plan.repo, plan.worktree, plan.branch)
        return await self._headless(plan, source)

    async def _interactive(self, plan: BuilderPlan, source: str) -> dict[str, Any]:
        name = session_name(self.config.name, plan.id)
        meta = {**plan.metadata(), "tmux_session": name, "tmux_socket": self.tmux.socket}
        new = NewSession(
            prompt=plan.prompt,
            trigger_source=source,
            runtime=self.spawner.adapter.type_name,
            model=self.config.runtime.model,
            type=plan.type,
            metadata=meta,
        )
        program = await self._prepare(plan, new.id)
        await self.sessions.create(new)
        try:
            await git.add_worktree(plan.repo, plan.worktree, plan.branch)
            await self.tmux.new_session(name, str(plan.worktree), program)
        except BaseException as exc:
            await self._undo(plan, new.id, str(exc))
            raise
        self.spawner.ledger.open(str(new.id))
        await self.sessions.mark_running(new.id)
        row = await self.sessions.get(new.id)
        return builder_view(row or {})

    async def _prepare(self, plan: BuilderPlan, session_id: uuid.UUID) -> list[str]:
        """Folder, home, MCP config and launch spec of the runtime; the argv tmux runs."""
        env = await build_runtime_env(self.config, self.spawner.credentials, current_traceparent())
        adapter = self.spawner.adapter.create_worker()
        folder = self.folder(plan.id)
        shutil.rmtree(folder, ignore_errors=True)  # a pruned builder's leftovers
        folder.mkdir(mode=0o700, parents=True)
        mcp = self.spawner.endpoint(str(session_id))
        write_mcp_configs(folder, mcp)
        invocation = Invocation(
            prompt=plan.prompt,
            system_prompt=self._system_prompt(adapter, plan),
            cwd=plan.worktree,
            workdir=folder,
            home=session_home(self.config.name, str(session_id)),  # as a session gets
            env=env,
            mcp=mcp,
            max_turns=self.config.runtime.max_turns,
            timeout_s=self.config.runtime.timeout_s,
            model=self.config.runtime.model,
            args=tuple(self.config.runtime.args),
        )
        if self.spawner.sandbox == "bwrap":
            # Its worktree and the repository's git folder (commits land there) are writable.
            invocation, self.spawner.jails[str(session_id)] = await start_jail_for(
                self.config,
                invocation,
                label=str(session_id),
                writable=(plan.worktree, plan.repo / ".git"),
            )
        try:
            command = adapter.interactive_command(invocation)
        except RuntimeFailure as exc:
            shutil.rmtree(folder, ignore_errors=True)
            await self._release_jail(str(session_id))
            raise UserError(str(exc)) from None
        for path, text in command.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            path.chmod(0o600)
        argv = command.argv
        if invocation.sandbox is not None:
            argv = invocation.sandbox.wrap(argv, interactive=True)
        return launch.program(launch.write_spec(folder, argv, command.env))

    async def _release_jail(self, session_id: str) -> dict[str, Any]:
        """Stop the egress of a builder's jail; what it refused, for the row."""
        jail = self.spawner.jails.pop(session_id, None)
        if jail is None:
            return {}
        await jail.close()
        return {"sandbox": jail.summary()} if jail.egress.blocked else {}

    def _system_prompt(self, adapter: Any, plan: BuilderPlan) -> str:
        prompt_file = adapter.parse_system_prompt_file(self.config.config_dir)
        system = compose_system_prompt(prompt_file, self.config.roster_dir)
        role = plan.role_text()
        return f"{system.rstrip()}\n\n{role}\n" if role else system

    async def _undo(self, plan: BuilderPlan, session_id: uuid.UUID, error: str) -> None:
        """Take back what a failed spawn created, and record the failure."""
        await self.tmux.kill(session_name(self.config.name, plan.id))
        if plan.worktree.exists():
            await git.git(
                plan.repo, "worktree", "remove", "--force", str(plan.worktree), check=False
            )
        if await git.branch_exists(plan.repo, plan.branch):
            await git.delete_branch(plan.repo, plan.branch)
        shutil.rmtree(self.folder(plan.id), ignore_errors=True)
        await self._release_jail(str(session_id))
        outcome = SessionOutcome("failed", False, "", f"spawn failed: {error}", [], 0)
        await self.sessions.complete(session_id, outcome)
        await self.sessions.update_metadata(session_id, {"ended_at": now_iso()})

    async def _headless(self, plan: BuilderPlan, source: str) -> dict[str, Any]:
        """The same builder run through the spawner to completion, in its worktree."""
        context = (
            f"You are a builder. Your git worktree is {plan.worktree} on branch {plan.branch}; "
            "work and commit there only."
        )
        if plan.role:
            context = f"{plan.role_text()}\n\n{context}"
        request = TriggerRequest(
            prompt=plan.prompt,
            context=context,
            trigger_source=source,
            session_type=plan.type,
            writable=(plan.worktree, plan.repo / ".git"),
        )
        result = await self.spawner.trigger(request)
        if result.session_id is None:  # refused before a session existed
            await git.remove_worktree(plan.repo, plan.worktree, force=True)
            await git.delete_branch(plan.repo, plan.branch)
            raise ButlerError(f"builder refused: {result.error}")
        session_id = uuid.UUID(result.session_id)
        meta = {**plan.metadata(), "headless": True, "ended_at": now_iso()}
        await self.sessions.update_metadata(session_id, meta)
        row = await self.sessions.get(session_id)
        return {**builder_view(row or {}), "result": result.to_dict()}

    async def rows(self) -> list[dict[str, Any]]:
        """Every builder's session row, newest first."""
        found: list[dict[str, Any]] = []
        for mode in MODES:
            found += await self.sessions.list(limit=10_000, type=mode)
        found = [row for row in found if is_builder(row)]
        return sorted(found, key=lambda row: row["created_at"], reverse=True)

    async def builders(self, include_pruned: bool = False) -> list[dict[str, Any]]:
        """Builder views, newest first; pruned ones only when asked."""
        views = [builder_view(row) for row in await self.rows()]
        return [v for v in views if include_pruned or not v["pruned"]]

    async def find(self, builder_id: str) -> dict[str, Any]:
        """The newest row of the builder ``builder_id``; UserError when there is none."""
        for row in await self.rows():
            if row["metadata"].get("builder_id") == builder_id:
                return row
        raise UserError(f"no builder {builder_id!r}; `butler builders` lists them")

    async def refresh(self) -> None:
        """Bring the rows of interactive builders in line with their tmux panes."""
        live = [row for row in await self.rows() if is_live(row)]
        if not live:
            return
        panes = await self.tmux.panes()
        for row in live:
            pane = panes.get(row["metadata"].get("tmux_session", ""))
            if pane is not None and not pane.dead:
                if row["status"] != "running":
                    await self._adopt(row)
                continue
            folder = self.folder(row["metadata"]["builder_id"])
            ended = launch.read_exit(folder) or (pane.record() if pane and pane.ended else None)
            if ended is not None or pane is None:  # else: dead, and its end not yet known
                await self._finish(row, pane is not None, ended)

    def folder(self, builder_id: str) -> Path:
        """The builder's private folder: MCP config, prompt files, launch spec, exit record."""
        return butler_dir(self.config.name) / "builders" / builder_id

    async def _adopt(self, row: dict[str, Any]) -> None:
        """A builder outlived a daemon restart (which failed its row): it runs again here."""
        self.spawner.ledger.open(row["id"])
        await self.sessions.mark_running(uuid.UUID(row["id"]))
        await self.sessions.update_metadata(uuid.UUID(row["id"]), {"adopted_at": now_iso()})

    async def _finish(self, row: dict[str, Any], screen: bool, ended: Exit | None) -> None:
        """Complete the row of a builder whose runtime ended; its last screen is the output."""
        if row["id"] in _FINISHING:
            return
        _FINISHING.add(row["id"])
        name = row["metadata"].get("tmux_session", "")
        output = await self.tmux.capture(name, OUTPUT_LINES) if screen else ""
        status, error = end_of(ended)
        calls = [call.to_json() for call in self.spawner.ledger.close(row["id"])]
        outcome = SessionOutcome(
            status, status == "succeeded", output, error, calls, elapsed_ms(row)
        )
        session_id = uuid.UUID(row["id"])
        await self.sessions.complete(session_id, outcome)
        ended = ended or {}
        await self.sessions.update_metadata(
            session_id,
            {
                "ended_at": now_iso(),
                "exit_status": ended.get("status"),
                "signal": ended.get("signal"),
                **await self._release_jail(row["id"]),
            },
        )
        log.info("builder finished", extra={"session_id": row["id"], "status": status})

    async def screen(self, row: dict[str, Any]) -> str | None:
        """What a running interactive builder's terminal shows now; None for others."""
        if not is_builder(row) or not is_live(row):
            return None
        return await self.tmux.capture(row["metadata"].get("tmux_session", ""), OUTPUT_LINES)


def end_of(ended: Exit | None) -> tuple[str, str | None]:
    """A finished builder's status and error, from how its runtime's process ended."""
    if ended is None:
        return "cancelled", "its tmux session was closed while the runtime ran"
    code, sig = ended.get("status"), ended.get("signal")
    if sig is not None:
        name = signal.Signals(sig).name if sig in _SIGNALS else str(sig)
        return ("cancelled" if sig in STOP_SIGNALS else "failed"), f"runtime ended by signal {name}"
    if code == 0:
        return "succeeded", None
    return "failed", f"runtime exited with status {code}"
