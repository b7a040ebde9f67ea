"""Following interactive builders while they run: each end seen and handed to the spawner.

A builder's runtime runs in tmux, out of any call's sight. The watcher,
started with the daemon, looks at the builders' panes every second: a pane
that runs again after a restart is adopted (the spawner makes its token and
jail's proxy valid again); a runtime that ended (the launcher's exit record,
or a pane that is gone) is finished, with its last screen as the output and
its exit record as its end, whether or not anyone is looking.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from butler.builders.records import builder_folder, builder_rows, is_live
from butler.builders.terminal import end_runtime
from butler.builders.tmux import Tmux
from butler.config import ButlerConfig
from butler.runtimes import launcher
from butler.spawner.endings import Exit
from butler.spawner.interactive import InteractiveEnd
from butler.spawner.spawner import Spawner
from butler.store.sessions import SessionStore

log = logging.getLogger(__name__)

OUTPUT_LINES = 2000  #: lines of scrollback kept as a finished builder's output
WATCH_INTERVAL_S = 1.0  #: how often the watcher looks for builders whose runtime ended
STOPPED = "stopped with butler builders stop"


class Watcher:
    """The interactive builders of one butler not yet seen to end."""

    def __init__(
        self, config: ButlerConfig, spawner: Spawner, sessions: SessionStore, tmux: Tmux
    ) -> None:
        self.config = config
        self.spawner = spawner
        self.sessions = sessions
        self.tmux = tmux
        #: Interactive builders not yet seen to end, by session id.
        self._live: dict[str, dict[str, Any]] = {}
        #: Rows claimed for completion; a claim is never given back, so two
        #: overlapping checks cannot complete one builder twice.
        self._finishing: set[str] = set()
        #: Builders being stopped on request: recorded cancelled however their runtime exits.
        self._stopping: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    def follow(self, row: dict[str, Any]) -> None:
        """Watch a builder that just started."""
        self._live[row["id"]] = row

    def finishing(self, session_id: str) -> bool:
        """Whether the builder's end is being recorded (or was)."""
        return session_id in self._finishing

    async def refresh(self) -> None:
        """Bring the rows of interactive builders in line with their tmux panes.

        Reads every builder row: done once at start (builders that outlived an
        earlier daemon), and by prune before it acts.
        """
        rows = await builder_rows(self.sessions)
        live = [row for row in rows if is_live(row) and row["id"] not in self._finishing]
        self._live = {row["id"]: row for row in live}
        await self._check(live)

    async def _check(self, live: list[dict[str, Any]]) -> None:
        """Adopt the live builders found running, finish those whose runtime ended."""
        if not live:
            return
        panes = await self.tmux.panes()
        for row in live:
            pane = panes.get(row["metadata"].get("tmux_session", ""))
            if pane is not None and not pane.dead:
                if row["status"] != "running":
                    await self._adopt(row)
                continue
            folder = builder_folder(self.config, row["metadata"]["builder_id"])
            ended = launcher.read_exit(folder) or (pane.record() if pane and pane.ended else None)
            if ended is not None or pane is None:  # else: dead, and its end not yet known
                await self.finish(row, pane is not None, ended)

    async def _adopt(self, row: dict[str, Any]) -> None:
        folder = builder_folder(self.config, row["metadata"]["builder_id"])
        await self.spawner.adopt_interactive(row["id"], folder)
        row["status"] = "running"

    async def finish(self, row: dict[str, Any], screen: bool, ended: Exit | None) -> None:
        """Have the spawner complete a builder whose runtime ended; its last screen is the
        output (when its pane is still there to read)."""
        if row["id"] in self._finishing:
            return
        self._finishing.add(row["id"])
        self._live.pop(row["id"], None)
        name = row["metadata"].get("tmux_session", "")
        output = await self.tmux.capture(name, OUTPUT_LINES) if screen else ""
        stopped = row["id"] in self._stopping or row["metadata"].get("stop_requested_at")
        end = InteractiveEnd(output, ended, STOPPED if stopped else None)
        folder = builder_folder(self.config, row["metadata"]["builder_id"])
        outcome = await self.spawner.finish_interactive(row, folder, end)
        log.info("builder finished", extra={"session_id": row["id"], "status": outcome.status})

    async def stop(self, row: dict[str, Any]) -> None:
        """End a builder's runtime (its whole process group); it is recorded cancelled."""
        self._stopping.add(row["id"])
        await end_runtime(self.tmux, row["metadata"].get("tmux_session", ""))
        folder = builder_folder(self.config, row["metadata"]["builder_id"])
        await self.finish(row, True, launcher.read_exit(folder))

    async def watch(self, interval_s: float = WATCH_INTERVAL_S) -> None:
        """Record each interactive builder's end as it happens; runs until cancelled."""
        while True:
            try:
                await self._check(list(self._live.values()))
            except Exception:
                log.exception("checking builders failed; trying again")
            await asyncio.sleep(interval_s)

    def start(self) -> None:
        """Start watching (once the server accepts: adopted builders call back into it)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.watch())

    async def close(self) -> None:
        """Stop watching; builders keep running in tmux without their daemon."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
