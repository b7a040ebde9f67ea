"""Create builders, follow them while they run, and list them.

A builder is recorded like every session, through the butler's one session
path: its row is written before anything is created, it turns ``running``
once its tmux session exists, and it is completed when its runtime ends.
:meth:`BuilderManager.watch`, started with the daemon, notices that end (the
launcher's exit record, or a pane that is gone) within a second, whether or
not anyone is looking.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from butler.builders import git, survivors
from butler.builders.modes import MODES, SpawnOptions, choose_mode
from butler.builders.plan import BuilderPlan, make_plan
from butler.builders.records import builder_view, elapsed_ms, is_builder, is_live, now_iso
from butler.builders.runtime_choice import builder_adapter, check_runtime, transcript_of
from butler.builders.terminal import Exit, end_of, end_runtime, type_prompt, usage_fields
from butler.builders.tmux import Tmux, session_name
from butler.config import ButlerConfig
from butler.errors import ButlerError, UserError
from butler.paths import butler_dir
from butler.runtimes import launcher
from butler.runtimes.base import Command, Invocation, RuntimeAdapter, RuntimeFailure
from butler.spawner.invocation import InvocationRequest
from butler.spawner.sandboxing import start_jail_for
from butler.spawner.spawner import Spawner, TriggerRequest
from butler.store.sessions import SessionOutcome, SessionStore

log = logging.getLogger(__name__)

__all__ = ["BuilderManager", "Exit", "end_of"]

OUTPUT_LINES = 2000  #: lines of scrollback kept as a finished builder's output
RUNTIME_DIR = "run"  #: in a builder's folder, the runtime's own (the jail's workspace)
WATCH_INTERVAL_S = 1.0  #: how often the watcher looks for builders whose runtime ended


class BuilderManager:
    """The builders of one butler: one per running butler, held by its context."""

    def __init__(
        self,
        config: ButlerConfig,
        spawner: Spawner,
        sessions: SessionStore,
        tmux: Tmux | None = None,
    ) -> None:
        self.config = config
        self.spawner = spawner
        self.lifecycle = spawner.lifecycle
        self.sessions = sessions
        self.tmux = tmux or Tmux()
        #: One spawn at a time, so an id found free is still free when it is taken.
        self._spawn_lock = asyncio.Lock()
        #: Rows claimed for completion; a claim is never given back, so two
        #: overlapping checks cannot complete one builder twice.
        self._finishing: set[str] = set()
        #: Interactive builders not yet seen to end, by session id.
        self._live: dict[str, dict[str, Any]] = {}
        self._watcher: asyncio.Task[None] | None = None
        #: Tasks typing builders' first prompts into their terminals.
        self._typing: set[asyncio.Task[bool]] = set()
        #: Builders being stopped on request: recorded cancelled however their runtime exits.
        self._stopping: set[str] = set()

    async def spawn(
        self, options: SpawnOptions, repo: Path, source: str = "external", headless: bool = False
    ) -> dict[str, Any]:
        """Create a builder; return its view (and, headless, the session's result)."""
        mode = choose_mode(options)
        if headless and mode == "shell":
            raise UserError("--headless needs a prompt; --shell is an interactive session only")
        runtime = self.spawner.adapter.type_name
        if options.runtime is not None:
            runtime = check_runtime(self.config, options.runtime)
            if headless and runtime != self.spawner.adapter.type_name:
                raise UserError(
                    f"--runtime {runtime} with --headless: headless builders run the butler's "
                    f"own runtime ({self.spawner.adapter.type_name}); drop one of them"
                )
        adapter = builder_adapter(self.config, self.spawner.adapter, runtime)
        root = await git.repo_root(repo)
        async with self._spawn_lock:
            taken = await git.builder_names(root) | {b["id"] for b in await self.builders()}
            plan = make_plan(mode, options, self.config.config_dir, root, taken)
            if not headless:
                await self._check_room()
                return await self._interactive(plan, source, adapter)
            await git.add_worktree(plan.repo, plan.worktree, plan.branch)
        return await self._headless(plan, source)

    async def running(self) -> int:
        """How many interactive builders run now (their runtimes hold no session slot)."""
        await self.refresh()
        return sum(1 for row in await self.rows() if is_live(row))

    async def _check_room(self) -> None:
        limit = self.config.butler.builders.max_running
        running = await self.running()
        if running >= limit:
            raise UserError(
                f"builder refused: {running} interactive builders running and "
                f"[butler.builders] max_running = {limit}; finish one or raise the limit"
            )

    async def _interactive(
        self, plan: BuilderPlan, source: str, adapter: RuntimeAdapter
    ) -> dict[str, Any]:
        name = session_name(self.config.name, plan.id)
        meta = {**plan.metadata(), "tmux_session": name, "tmux_socket": self.tmux.socket}
        new = self.lifecycle.new(plan.prompt, source, plan.type, meta)
        new = dataclasses.replace(new, runtime=adapter.type_name, model=adapter.config.model)
        sid = str(new.id)
        invocation = await self._prepare(plan, sid, adapter)
        await self.lifecycle.create(new)
        try:
            await git.add_worktree(plan.repo, plan.worktree, plan.branch)
            # Built again now that the worktree exists: a runtime reads its project config.
            program, command = self._launch(invocation, adapter)
            await self.tmux.new_session(name, str(plan.worktree), program)
        except BaseException as exc:
            await self._undo(plan, sid, str(exc))
            raise
        survivors.hand_over(self.spawner.jails.get(sid), await self.tmux.pane_pid(name))
        await self.lifecycle.running(sid)
        task = asyncio.get_running_loop().create_task(type_prompt(self.tmux, name, command))
        self._typing.add(task)
        task.add_done_callback(self._typing.discard)
        row = await self.sessions.get(sid) or {}
        if row:
            self._live[sid] = row
        return builder_view(row)

    async def _prepare(
        self, plan: BuilderPlan, session_id: str, adapter: RuntimeAdapter
    ) -> Invocation:
        """Folder, home and jail of the runtime; a runtime without a terminal mode refuses."""
        folder = self.folder(plan.id)
        shutil.rmtree(folder, ignore_errors=True)  # a pruned builder's leftovers
        # Launch spec, pid, exit record, restart notes: beside the runtime's, out of its reach.
        folder.mkdir(mode=0o700, parents=True)
        (folder / RUNTIME_DIR).mkdir(mode=0o700)
        request = InvocationRequest(
            session_id=session_id,
            prompt=plan.prompt,
            cwd=plan.worktree,
            workdir=folder / RUNTIME_DIR,
            role=plan.role_text(),
        )
        try:
            invocation = await self.spawner.invocation(request, adapter)
            if self.spawner.sandbox == "bwrap":
                # Its worktree and the repository's git folder (commits land there) are writable.
                invocation, self.spawner.jails[str(session_id)] = await start_jail_for(
                    self.config,
                    invocation,
                    label=str(session_id),
                    writable=(plan.worktree, plan.repo / ".git"),
                    runtime=adapter.config,
                )
            survivors.remember(
                folder, session_id, self.lifecycle.tokens, self.spawner.jails.get(session_id)
            )
            self.spawner.interactive_command(invocation, adapter)
        except RuntimeFailure as exc:
            shutil.rmtree(folder, ignore_errors=True)
            await self._release_jail(str(session_id))
            raise UserError(str(exc)) from None
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            await self._release_jail(str(session_id))
            raise
        return invocation

    def _launch(self, invocation: Invocation, adapter: RuntimeAdapter) -> tuple[list[str], Command]:
        """The runtime's config files and launch spec; the argv tmux runs, and the command."""
        command = self.spawner.interactive_command(invocation, adapter)
        for path, text in command.files.items():
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:  # private from its first byte
                out.write(text)
        argv = command.argv
        if invocation.sandbox is not None:
            argv = invocation.sandbox.wrap(argv, env=command.env, interactive=True)
        script = launcher.write_launcher(
            invocation.workdir.parent,  # the builder's folder, which the runtime cannot write
            argv,
            command.env,
            passthrough=launcher.TERMINAL_VARS,
            supervise=True,
        )
        return [str(script)], command

    async def _release_jail(self, session_id: str, folder: Path | None = None) -> dict[str, Any]:
        """Stop the egress of a builder's jail; what it refused, for the row. A jail no
        daemon held (its builder ended unadopted) only has its folder removed."""
        jail = self.spawner.jails.pop(session_id, None)
        if jail is None:
            if folder is not None:
                await asyncio.to_thread(survivors.forget, folder)
            return {}
        await jail.close()
        return {"sandbox": jail.summary()} if jail.egress.blocked else {}

    async def _undo(self, plan: BuilderPlan, session_id: str, error: str) -> None:
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
        await self.lifecycle.annotate(session_id, {"ended_at": now_iso()})
        await self.lifecycle.complete(session_id, outcome)

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
        meta = {**plan.metadata(), "headless": True, "ended_at": now_iso()}
        await self.lifecycle.annotate(result.session_id, meta)
        row = await self.sessions.get(result.session_id)
        return {**builder_view(row or {}), "result": result.to_dict()}

    async def rows(self) -> list[dict[str, Any]]:
        """Every builder's session row, newest first."""
        return [row for row in await self.sessions.of_types(MODES) if is_builder(row)]

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
        """Bring the rows of interactive builders in line with their tmux panes.

        Reads every builder row: the watcher does this once at start (builders that
        outlived an earlier daemon), and prune before it acts.
        """
        rows = await self.rows()
        live = [row for row in rows if is_live(row) and row["id"] not in self._finishing]
        self._live = {row["id"]: row for row in live}
        await self._check(live)

    async def _check(self, live: list[dict[str, Any]]) -> None:
        """Adopt the live builders found running, complete those whose runtime ended."""
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
            ended = launcher.read_exit(folder) or (pane.record() if pane and pane.ended else None)
            if ended is not None or pane is None:  # else: dead, and its end not yet known
                await self._finish(row, pane is not None, ended)

    async def adopt_survivors(self) -> None:
        """At start-up: builders still running from an earlier daemon run again here.

        Done before the server accepts, so no listing ever shows them failed.
        """
        try:
            await self.refresh()
        except ButlerError as exc:  # tmux missing: builders cannot have survived
            log.warning("could not look for surviving builders: %s", exc)

    async def watch(self, interval_s: float = WATCH_INTERVAL_S) -> None:
        """Record each interactive builder's end as it happens; runs until cancelled."""
        while True:
            try:
                await self._check(list(self._live.values()))
            except Exception:
                log.exception("checking builders failed; trying again")
            await asyncio.sleep(interval_s)

    def start(self) -> None:
        """Start the watcher (once the server accepts: adopted builders call back into it)."""
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self.watch())

    async def stop(self) -> None:
        """Stop the watcher; builders keep running in tmux without their daemon."""
        if self._watcher is None:
            return
        for task in [self._watcher, *self._typing]:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._watcher
        self._watcher = None

    def folder(self, builder_id: str) -> Path:
        """The builder's private folder: MCP config, prompt files, launch spec, exit record."""
        return butler_dir(self.config.name) / "builders" / builder_id

    async def _adopt(self, row: dict[str, Any]) -> None:
        """A builder outlived a daemon restart (which failed its row): it runs again here,
        its session token valid again and its jail's proxy started again."""
        folder = self.folder(row["metadata"]["builder_id"])
        if row["id"] not in self.spawner.jails:
            jail = await survivors.restore(folder, row["id"], self.lifecycle.tokens, row["id"])
            if jail is not None:
                self.spawner.jails[row["id"]] = jail
        await self.lifecycle.running(row["id"])
        await self.lifecycle.annotate(row["id"], {"adopted_at": now_iso()})
        row["status"] = "running"

    async def _finish(self, row: dict[str, Any], screen: bool, ended: Exit | None) -> None:
        """Complete the row of a builder whose runtime ended; its last screen is the output."""
        if row["id"] in self._finishing:
            return
        self._finishing.add(row["id"])
        self._live.pop(row["id"], None)
        name = row["metadata"].get("tmux_session", "")
        output = await self.tmux.capture(name, OUTPUT_LINES) if screen else ""
        status, error = end_of(ended)
        if row["id"] in self._stopping or row["metadata"].get("stop_requested_at"):
            status, error = "cancelled", "stopped with butler stop"
        folder = self.folder(row["metadata"]["builder_id"])
        used = await asyncio.to_thread(
            transcript_of, self.config, self.spawner.adapter, row, folder / RUNTIME_DIR
        )
        outcome = SessionOutcome(
            status, status == "succeeded", output, error, [], elapsed_ms(row),
            **usage_fields(used), model=used.model if used else None,
        )  # fmt: skip
        ended = ended or {}
        # How it ended is written first, so whoever sees the row completed sees why.
        await self.lifecycle.annotate(
            row["id"],
            {
                "ended_at": now_iso(),
                "exit_status": ended.get("status"),
                "signal": ended.get("signal"),
                **await self._release_jail(row["id"], folder),
            },
        )
        await self.lifecycle.complete(row["id"], outcome)
        log.info("builder finished", extra={"session_id": row["id"], "status": status})

    async def stop_builder(self, builder_id: str) -> dict[str, Any]:
        """End a running builder's runtime (its whole process group) and record it cancelled."""
        row = await self.find(builder_id)
        if not is_live(row) or row["id"] in self._finishing:
            raise UserError(
                f"builder {builder_id} is not running (status {row['status']}); nothing to stop"
            )
        self._stopping.add(row["id"])
        await self.lifecycle.annotate(row["id"], {"stop_requested_at": now_iso()})
        await end_runtime(self.tmux, row["metadata"].get("tmux_session", ""))
        ended = launcher.read_exit(self.folder(builder_id))
        await self._finish(row, True, ended)
        return builder_view(await self.sessions.get(row["id"]) or row)

    async def screen(self, row: dict[str, Any]) -> str | None:
        """What a running interactive builder's terminal shows now; None for others."""
        if not is_builder(row) or not is_live(row):
            return None
        return await self.tmux.capture(row["metadata"].get("tmux_session", ""), OUTPUT_LINES)
