"""Create builders, list them, stop them.

A builder is a session of the butler's one session path whose runtime runs
in tmux, in a git worktree of its own. The spawner records it, builds its
invocation, jail, config files and launcher, and adopts and finishes it
(:meth:`Spawner.interactive`); this module does what is a builder's own: the
worktree and branch (``git``), the tmux session that runs the launcher, the
first prompt typed into it, and the :class:`~butler.builders.watcher.Watcher`
that notices each end. A headless builder is a plain trigger in its worktree.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from butler.builders import git
from butler.builders.modes import SpawnOptions, choose_mode
from butler.builders.plan import BuilderPlan, make_plan
from butler.builders.records import (
    builder_folder,
    builder_rows,
    builder_view,
    is_builder,
    is_live,
    mark,
    now_iso,
)
from butler.builders.terminal import type_prompt
from butler.builders.tmux import Tmux, session_name
from butler.builders.watcher import OUTPUT_LINES, Watcher
from butler.config import ButlerConfig
from butler.errors import ButlerError, UserError
from butler.runtimes.base import Command
from butler.spawner.interactive import InteractiveRequest
from butler.spawner.runtime_choice import check_runtime
from butler.spawner.spawner import Spawner, TriggerRequest
from butler.store.sessions import SessionStore

__all__ = ["BuilderManager"]

log = logging.getLogger(__name__)


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
        self.sessions = sessions
        self.tmux = tmux or Tmux()
        self.watcher = Watcher(config, spawner, sessions, self.tmux)
        #: One spawn at a time, so an id found free is still free when it is taken.
        self._spawn_lock = asyncio.Lock()
        #: Tasks typing builders' first prompts into their terminals.
        self._typing: set[asyncio.Task[bool]] = set()

    async def spawn(
        self,
        options: SpawnOptions,
        repo: Path,
        source: str = "external",
        headless: bool = False,
        caller: str | None = None,
    ) -> dict[str, Any]:
        """Create a builder; return its view (and, headless, the session's result).

        ``caller`` is the running session that asked: the builder, headless or
        interactive, is its child, in its chain (spawner/chains.py), and so is
        every session the builder starts.
        """
        mode = choose_mode(options)
        if headless and mode == "shell":
            raise UserError("--headless needs a prompt; --shell is an interactive session only")
        own = self.spawner.adapter.type_name
        runtime = check_runtime(self.config, options.runtime) if options.runtime else own
        if headless and runtime != own:
            raise UserError(
                f"--runtime {runtime} with --headless: headless builders run the butler's "
                f"own runtime ({own}); drop one of them"
            )
        root = await git.repo_root(repo)
        async with self._spawn_lock:
            taken = await git.builder_names(root) | {b["id"] for b in await self.builders()}
            plan = make_plan(mode, options, self.config.config_dir, root, taken)
            if not headless:
                await self._check_room()
                return await self._interactive(plan, source, runtime, caller)
            await git.add_worktree(plan.repo, plan.worktree, plan.branch)
        return await self._headless(plan, source, caller)

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
        self, plan: BuilderPlan, source: str, runtime: str, caller: str | None = None
    ) -> dict[str, Any]:
        """The builder's session, started by the spawner, its runtime placed in tmux."""
        name = session_name(self.config.name, plan.id)
        request = InteractiveRequest(
            prompt=plan.prompt,
            cwd=plan.worktree,
            folder=self.folder(plan.id),
            trigger_source=source,
            session_type=plan.type,
            metadata={**plan.metadata(), "tmux_session": name, "tmux_socket": self.tmux.socket},
            runtime=runtime,
            role=plan.role_text(),
            writable=plan_writable(plan),
            caller_session_id=caller,
        )
        try:
            async with self.spawner.interactive(request) as session:
                await git.add_worktree(plan.repo, plan.worktree, plan.branch)
                launch = await session.launch()
                await self.tmux.new_session(name, str(plan.worktree), launch.argv)
                session.runs_as(await self.tmux.pane_pid(name))
        except BaseException:
            await self._undo(plan)
            raise
        self._type(name, launch.command)
        row = await self.sessions.get(session.session_id) or {}
        if row:
            self.watcher.follow(row)
        return builder_view(row)

    def _type(self, name: str, command: Command) -> None:
        """Type the builder's first prompt into its terminal, in the background."""
        task = asyncio.get_running_loop().create_task(type_prompt(self.tmux, name, command))
        self._typing.add(task)
        task.add_done_callback(self._typing.discard)

    async def _undo(self, plan: BuilderPlan) -> None:
        """Take back the tmux session, worktree and branch of a spawn that failed."""
        await self.tmux.kill(session_name(self.config.name, plan.id))
        if plan.worktree.exists():
            await git.git(
                plan.repo, "worktree", "remove", "--force", str(plan.worktree), check=False
            )
        if await git.branch_exists(plan.repo, plan.branch):
            await git.delete_branch(plan.repo, plan.branch)

    async def _headless(
        self, plan: BuilderPlan, source: str, caller: str | None = None
    ) -> dict[str, Any]:
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
            metadata={**plan.metadata(), "headless": True},
            writable=plan_writable(plan),
            caller_session_id=caller,
        )
        result = await self.spawner.trigger(request)
        if result.session_id is None:  # refused before a session existed
            await git.remove_worktree(plan.repo, plan.worktree, force=True)
            await git.delete_branch(plan.repo, plan.branch)
            raise ButlerError(f"builder refused: {result.error}")
        row = await self.sessions.get(result.session_id)
        return {**builder_view(row or {}), "result": result.to_dict()}

    async def rows(self) -> list[dict[str, Any]]:
        """Every builder's session row, newest first."""
        return await builder_rows(self.sessions)

    async def builders(self, include_pruned: bool = False) -> list[dict[str, Any]]:
        """Builder views, newest first; pruned ones only when asked."""
        views = [builder_view(row) for row in await self.rows()]
        return [v for v in views if include_pruned or not v["pruned"]]

    async def find(self, builder_id: str) -> dict[str, Any]:
        """The newest row of the builder ``builder_id``; UserError when there is none."""
        for row in await self.rows():
            if row["metadata"].get("builder_id") == builder_id:
                return row
        raise UserError(f"no builder {builder_id!r}; `butler builders list` lists them")

    async def refresh(self) -> None:
        """Bring the rows of interactive builders in line with their tmux panes."""
        await self.watcher.refresh()

    async def adopt_survivors(self) -> None:
        """At start-up: builders still running from an earlier daemon run again here.

        Done before the server accepts, so no listing ever shows them failed.
        """
        try:
            await self.refresh()
        except ButlerError as exc:  # tmux missing: builders cannot have survived
            log.warning("could not look for surviving builders: %s", exc)

    def start(self) -> None:
        """Start the watcher (once the server accepts: adopted builders call back into it)."""
        self.watcher.start()

    async def stop(self) -> None:
        """Stop the watcher and the typing; builders keep running in tmux without their daemon."""
        for task in self._typing:
            task.cancel()
        await self.watcher.close()

    def folder(self, builder_id: str) -> Path:
        """The builder's private folder: its session's launch spec, exit record, restart notes."""
        return builder_folder(self.config, builder_id)

    async def stop_builder(self, builder_id: str) -> dict[str, Any]:
        """End a running builder's runtime (its whole process group) and record it cancelled."""
        row = await self.find(builder_id)
        if not is_live(row) or self.watcher.finishing(row["id"]):
            raise UserError(
                f"builder {builder_id} is not running (status {row['status']}); nothing to stop"
            )
        await mark(self.sessions, row, {"stop_requested_at": now_iso()})
        await self.watcher.stop(row)
        return builder_view(await self.sessions.get(row["id"]) or row)

    async def screen(self, row: dict[str, Any]) -> str | None:
        """What a running interactive builder's terminal shows now; None for others."""
        if not is_builder(row) or not is_live(row):
            return None
        return await self.tmux.capture(row["metadata"].get("tmux_session", ""), OUTPUT_LINES)


def plan_writable(plan: BuilderPlan) -> tuple[Path, ...]:
    """What a builder's runtime may write besides its own folder: its worktree, and the
    repository's git folder, where its commits land."""
    return (plan.worktree, plan.repo / ".git")
