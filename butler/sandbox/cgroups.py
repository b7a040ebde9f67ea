"""Per-session bounds the kernel holds: a cgroup v2 per session, where the daemon may make one.

A session's jail is held to ``[butler.sandbox] max_processes`` and ``max_memory_mb``.
Where this daemon owns a cgroup v2 subtree with the ``memory`` and ``pids`` controllers
(run as root on a machine booted with cgroup v2 alone, or as a user in a cgroup of its
own that systemd delegated: ``systemd-run --user --scope -p Delegate=yes butler up``),
each session gets a cgroup of its own: ``pids.max`` and ``memory.max`` at its bounds,
no swap, and the whole cgroup killed together when it runs out. The kernel refuses the
process past the bound and kills past the memory; the bridge is woken by the cgroup's
event files and ends the session naming the bound (bridge_cgroup.c). Nothing polls.

Elsewhere the bridge's watcher holds them, looking at the jail's ``/proc`` every 50 ms
(bridge_bounds.c), under rlimits that stop a fork bomb between two looks: where the
cgroup tree is v1 or hybrid (the controllers belong to v1, whose ``pids.events`` wakes
nobody), or this user may not write it (an ordinary user with no delegation, most
containers). :func:`session_cgroups` decides once per process and says why.

The daemon's own process moves into a leaf of its cgroup (``butler-daemon``), as a
delegated subtree requires (a cgroup whose children have controllers holds no process).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

log = logging.getLogger("butler.sandbox")

#: The controllers a session's bounds need.
NEEDED = ("memory", "pids")
#: The leaf of the daemon's cgroup its own process moves into.
DAEMON_LEAF = "butler-daemon"
#: Sessions' cgroups are named ``butler-session-<hex>``.
SESSION_PREFIX = "butler-session-"
#: The event files the bridge waits on, the counter that says a bound was passed, and
#: which bound: passed to the bridge as ``watch=FD:KEY:BOUND``.
EVENTS = (("pids.events", "max", "processes"), ("memory.events", "oom_kill", "memory"))


@dataclass(frozen=True)
class Where:
    """Where per-session bounds are held on this machine, and why."""

    #: The cgroup sessions' cgroups are made in, or None: the bridge's watcher holds them.
    parent: Path | None
    why: str


def _cgroup2_mount(mountinfo: str) -> Path | None:
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - cgroup2 " in line and len(fields) > 4 and fields[3] == "/":
            return Path(fields[4])
    return None


def _own_path(cgroup: str) -> str | None:
    for line in cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:]
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def find(proc: Path = Path("/proc/self")) -> Where:
    """Where this process may hold sessions' bounds in a cgroup, taking its subtree if it must."""
    mount = _cgroup2_mount(_read(proc / "mountinfo"))
    own = _own_path(_read(proc / "cgroup"))
    if mount is None or own is None:
        return Where(None, "no cgroup v2 here")
    folder = mount / own.lstrip("/")
    if folder.name == DAEMON_LEAF:
        folder = folder.parent  # taken before by this process (or its parent's daemon)
    missing = [c for c in NEEDED if c not in _read(folder / "cgroup.controllers").split()]
    if missing:
        why = f"cgroup v2 has no {' and '.join(missing)} controller at {folder}"
        if (mount.parent / "memory").is_dir():
            why += " (they belong to the cgroup v1 hierarchy of this machine)"
        return Where(None, why)
    if not os.access(folder / "cgroup.subtree_control", os.W_OK):
        return Where(None, f"{folder} is not this user's to write (no delegation)")
    try:
        _take(folder, root=folder == mount)
    except OSError as exc:
        return Where(
            None,
            f"cannot take {folder} for sessions ({exc.strerror}): run the daemon in a cgroup "
            "of its own (systemd-run --user --scope -p Delegate=yes butler up)",
        )
    sweep(folder)
    return Where(folder, f"a cgroup v2 per session, under {folder}")


def sweep(parent: Path) -> list[Path]:
    """Remove sessions' cgroups left empty under ``parent`` (a daemon killed, a builder that
    outlived its daemon and ended since); one still holding a process stays."""
    removed = []
    for folder in parent.glob(f"{SESSION_PREFIX}*"):
        with contextlib.suppress(OSError):
            folder.rmdir()
            removed.append(folder)
    return removed


def _take(folder: Path, root: bool) -> None:
    """Enable the controllers for ``folder``'s children, moving this process to a leaf first
    (but in the root cgroup, which may hold processes beside children with controllers).
    Another process left in ``folder`` makes the kernel refuse (EBUSY)."""
    enabled = _read(folder / "cgroup.subtree_control").split()
    if all(c in enabled for c in NEEDED):
        return
    if not root and _read(folder / "cgroup.procs").strip():
        leaf = folder / DAEMON_LEAF
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
    (folder / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in NEEDED))


@lru_cache(maxsize=1)
def session_cgroups() -> Where:
    """:func:`find`, once per process; the answer logged once."""
    where = find()
    held = where.why if where.parent else f"the jail's watcher ({where.why})"
    log.info("per-session bounds: %s", held)
    return where


def make(parent: Path, processes: int, memory_mb: int) -> Path:
    """A session's cgroup under ``parent``, held to ``processes`` and ``memory_mb``."""
    folder = parent / f"{SESSION_PREFIX}{uuid.uuid4().hex[:16]}"
    folder.mkdir()
    try:
        limit(folder, processes, memory_mb)
    except OSError:
        remove(folder)
        raise
    return folder


def limit(folder: Path, processes: int, memory_mb: int) -> None:
    """Hold the cgroup at ``folder`` to ``processes`` and ``memory_mb``, with no swap, and
    have the kernel kill all of it at once when its memory runs out."""
    (folder / "pids.max").write_text(str(processes))
    (folder / "memory.max").write_text(str(memory_mb << 20))
    for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
        if (folder / name).exists():  # no swap accounting on every machine
            (folder / name).write_text(value)


#: How long a session's cgroup may take to empty once its jail ended.
REMOVE_S = 5.0


def remove(folder: Path) -> None:
    """Kill whatever is left in a session's cgroup and remove it (blocking: run in a thread)."""
    with contextlib.suppress(OSError):
        (folder / "cgroup.kill").write_text("1")
    deadline = time.monotonic() + REMOVE_S
    while True:
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:  # its last processes are stuck in the kernel
                log.warning("a session's cgroup could not be removed: %s", folder)
                return
            time.sleep(0.01)  # killed processes are being torn down: no event to wait on
