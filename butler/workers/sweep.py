"""A starting worker cleans up after one that was killed on this machine.

Done for each butler it serves, before it takes any of that butler's work.
From the ledger (:mod:`.ledger`) it knows the sessions the dead worker was
running: a runtime still alive is ended (its process group, checked by the
leader's start time as the daemon's orphan sweep does), a row still open is
recorded failed through the daemon (a result handed back, as any worker's),
and the job leaves the queue so no worker picks it again: a session is never
run twice, since its runtime may have acted already. Then the workspaces and
jail folders whose owner is gone, the homes of those sessions when their
runtime cannot resume, and homes past their age are removed, as a starting
daemon removes its own (:mod:`butler.spawner.recovery`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

from pgqueuer import Queries

from butler.config import ButlerConfig
from butler.runtimes.registry import adapter_class
from butler.sandbox.folders import sweep_jail_folders
from butler.spawner.homes import discard_home, prune_homes
from butler.spawner.orphans import reap
from butler.spawner.result import Ending
from butler.spawner.workspace import sweep_leftovers
from butler.store.db import Database
from butler.store.session_jobs import SessionJobs
from butler.workers import ledger

log = logging.getLogger(__name__)


def found_at_restart(entry: ledger.Entry, worker: str) -> Ending:
    """How a session ended whose worker was killed, as the next one on its machine finds it."""
    return Ending(
        error=f"the worker {entry.worker} stopped while this session ran; the next worker on "
        f"its machine ({worker}) found it at its start; it is not run again, since its "
        "runtime may have acted already"
    )


@dataclass
class Swept:
    """What one butler's sweep found and did."""

    #: Sessions of the dead worker recorded failed now.
    recorded: list[str] = field(default_factory=list)
    #: Runtime process groups still running, ended.
    killed: int = 0
    #: Folders removed: workspaces, jail folders, homes.
    removed: list[Path] = field(default_factory=list)


async def sweep_after_killed(
    config: ButlerConfig, db: Database, queries: Queries, worker: str
) -> Swept:
    """Clean up what killed workers of this machine left of ``config``'s sessions."""
    swept = Swept()
    jobs = SessionJobs(db)
    for entry in ledger.left_behind():
        if entry.butler != config.name or entry.schema != config.db_schema:
            continue  # another butler's: its own sweep takes it, when a worker serves it
        if entry.pgid is not None and await asyncio.to_thread(reap, entry.pgid, entry.ticks):
            swept.killed += 1
        if await jobs.open(entry.session_id):
            # The runtime's own result when it ended before its worker did; else the stop.
            result = entry.result or found_at_restart(entry, worker).to_json()
            await jobs.put_result(entry.session_id, worker, result, entry.key)
            swept.recorded.append(entry.session_id)
        # Out of the queue: once recorded, the job is no one's to pick again.
        await queries.mark_job_as_cancelled([entry.job_id])  # type: ignore[list-item]
        if not _resumable(entry.runtime, config):
            discard_home(config, entry.session_id)
        ledger.forget(entry)
    swept.removed += await asyncio.to_thread(_folders, config)
    if swept.recorded or swept.killed or swept.removed:
        log.warning(
            "cleaned up after a killed worker",
            extra={
                "butler": config.name,
                "sessions": swept.recorded,
                "runtimes_killed": swept.killed,
                "folders": len(swept.removed),
            },
        )
    return swept


def _folders(config: ButlerConfig) -> list[Path]:
    removed = sweep_leftovers(f"butler_{config.name}_") + sweep_jail_folders()
    return removed + prune_homes(config)


def _resumable(runtime: str, config: ButlerConfig) -> bool:
    try:
        return adapter_class(runtime, config.roster_dir).supports_resume
    except ValueError:
        return True  # a runtime no longer known: keep its home, the age sweep takes it
