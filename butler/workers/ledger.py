"""What a worker runs, written on its own disk, so that its next start finds what a
killed one left (docs/scaling.md, "A restarted worker").

A worker killed outright (``kill -9``, a lost machine) leaves its sessions'
rows open, their jobs ``picked`` in the queue, and their workspaces, jail
folders and homes on its disk. PgQueuer's heartbeat reclaim notices the job
after a minute, from any worker; the dead worker's own machine knows sooner
and knows more (which folders, which process group). So each picked session
has an entry here, ``<data>/workers/running/<schema>.<session id>.json``,
from before its runtime starts until its result is in the database (the
result is written into the entry first: the worker's journal while the
database is away); the entry names the worker's pid and start time, and a
later worker treats only the entries of a worker that is gone as left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from butler.paths import data_root
from butler.processes import pid_alive, start_ticks
from butler.security import untrusted
from butler.security.private_files import replace_private

#: An entry is a few hundred bytes, or the session's result (its output is bounded by
#: ``max_output_bytes``); one larger than this is not ours.
ENTRY_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    """One session this worker (``owner``) picked and has not yet handed back."""

    owner: int
    #: The owner's start time (clock ticks since boot): a pid alone may be another
    #: process's by now, or this one's (a worker restarted in a fresh container is pid 1
    #: again, over the same data volume).
    owner_ticks: int | None
    worker: str
    butler: str
    schema: str
    session_id: str
    job_id: int
    runtime: str
    #: The pickup's key its result goes back with (:class:`~butler.store.session_jobs.Pickup`).
    key: str = ""
    #: The runtime's process group and its leader's start time, once it started.
    pgid: int | None = None
    ticks: int | None = None
    #: What the runtime produced, once it ended and until the daemon has it: a result
    #: the database could not take yet (an outage) is handed back from here.
    result: dict[str, Any] | None = None

    @property
    def file_name(self) -> str:
        return f"{self.schema}.{self.session_id}.json"


def ledger_dir() -> Path:
    """Where this machine's workers note their running sessions."""
    folder = data_root() / "workers" / "running"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def note(entry: Entry) -> None:
    """Write (or rewrite) ``entry``."""
    path = ledger_dir() / entry.file_name
    replace_private(path, json.dumps(asdict(entry)))


def started(entry: Entry, pgid: int, ticks: int | None) -> Entry:
    """``entry`` with its runtime's process group, written."""
    entry = replace(entry, pgid=pgid, ticks=ticks)
    note(entry)
    return entry


def ended(entry: Entry, result: dict[str, Any]) -> Entry:
    """``entry`` with its session's result, written before the result is handed back."""
    entry = replace(entry, result=result)
    note(entry)
    return entry


def forget(entry: Entry) -> None:
    """The session's result is handed back: nothing of it is left to find."""
    with contextlib.suppress(FileNotFoundError):
        (ledger_dir() / entry.file_name).unlink()


def left_behind() -> list[Entry]:
    """Entries of workers that are gone (never this process's, nor a live one's)."""
    found = []
    for path in sorted(ledger_dir().glob("[!.]*.json")):
        entry = _read(path)
        if entry is None:
            with contextlib.suppress(OSError):
                path.unlink()  # not an entry a worker wrote: nothing to act on
            continue
        if not _alive(entry):
            found.append(entry)
    return found


def owner_ticks() -> int | None:
    """This worker's start time, which its entries record beside its pid."""
    return start_ticks(os.getpid())


def _alive(entry: Entry) -> bool:
    """Whether the worker that wrote ``entry`` still runs (this one, or another)."""
    return pid_alive(entry.owner) and start_ticks(entry.owner) == entry.owner_ticks


def _read(path: Path) -> Entry | None:
    # Only this user's workers write here, but the file is read as data all the same:
    # bounded, through no link, every field checked for its type.
    try:
        raw = untrusted.read_or_none(path.parent, path.name, ENTRY_LIMIT)
        data = json.loads(raw or b"")
        entry = Entry(
            owner=int(data["owner"]),
            owner_ticks=None if data.get("owner_ticks") is None else int(data["owner_ticks"]),
            worker=str(data["worker"]),
            butler=str(data["butler"]),
            schema=str(data["schema"]),
            session_id=str(data["session_id"]),
            job_id=int(data["job_id"]),
            runtime=str(data["runtime"]),
            key=str(data.get("key") or ""),
            pgid=None if data.get("pgid") is None else int(data["pgid"]),
            ticks=None if data.get("ticks") is None else int(data["ticks"]),
            result=data["result"] if isinstance(data.get("result"), dict) else None,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return entry if entry.file_name == path.name else None
