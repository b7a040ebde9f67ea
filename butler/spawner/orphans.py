"""Runtime process groups a killed daemon left behind, found and ended at the next start.

Each session's runtime runs in its own process group. When it starts, the
group id and the leader's start time (from ``/proc/<pid>/stat``) go on the
session's row. A daemon killed outright cannot end those groups, so the next
start does, before it sweeps workspaces the groups may still be using. A pid
is only trusted with its start time: a leader with the same pid but another
start time is a stranger that reused the number, and is left alone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from butler.processes import start_ticks
from butler.runtimes.process import kill_group
from butler.store.sessions import SessionStore

log = logging.getLogger(__name__)

PGID_KEY = "runtime_pgid"
START_KEY = "runtime_start_ticks"


def group_members(pgid: int) -> list[int]:
    """The live processes whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def recorder(
    annotate: Callable[[dict[str, Any]], Coroutine[Any, Any, None]],
) -> Callable[[int], None]:
    """A hook that records each started process group on the session's row."""
    pending: set[asyncio.Task[None]] = set()

    def started(pid: int) -> None:
        meta = {PGID_KEY: pid, START_KEY: start_ticks(pid)}
        task = asyncio.get_running_loop().create_task(annotate(meta))
        pending.add(task)
        task.add_done_callback(pending.discard)

    return started


def reap(pgid: int, ticks: int | None) -> bool:
    """End the group if it is still the one recorded; True when something was killed."""
    leader = start_ticks(pgid)
    if leader is not None:
        if leader != ticks:
            return False  # the pid was reused by another process
        return kill_group(pgid, signal.SIGKILL)
    # The leader is gone. While any member lives, the kernel keeps the group id
    # out of reuse, so every member still in it belongs to the recorded group.
    killed = False
    for pid in group_members(pgid):
        try:
            os.kill(pid, signal.SIGKILL)
            killed = True
        except ProcessLookupError:
            pass
    return killed


@dataclass(frozen=True)
class Orphans:
    """What a stopped daemon left of its headless sessions, once their runtimes are ended."""

    #: Process groups that were still running and were killed.
    killed: int
    #: ``(session id, runtime type)`` of every headless session it left open: no runtime
    #: runs for them any more (an interactive one in tmux never records a process group).
    sessions: list[tuple[str, str]]


async def reap_orphans(sessions: SessionStore) -> Orphans:
    """Kill the runtime groups of sessions a stopped daemon left open; say what was found."""
    rows = await sessions.unfinished_with(PGID_KEY)
    reaped = 0
    for row in rows:
        meta = row["metadata"]
        if await asyncio.to_thread(reap, int(meta[PGID_KEY]), meta.get(START_KEY)):
            reaped += 1
            log.warning(
                "killed a runtime left running by a stopped daemon",
                extra={"session_id": str(row["id"]), "pgid": meta[PGID_KEY]},
            )
    return Orphans(reaped, [(str(row["id"]), row["runtime"]) for row in rows])
