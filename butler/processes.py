"""Naming a process so that its number, once reused, is not taken for it.

A pid names whichever process holds the number now. A daemon restarted in a
container is given the pid of the one killed before it, and on a busy host a
number comes round again: a sweep that trusted a pid alone would take what a
killed daemon left for its own, or for a live stranger's, and keep it for
ever. So what a process leaves to be swept after it (a jail's folder, a warm
home, a worker's ledger entry) names its owner by pid and start time.
"""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        # The command name may hold spaces and parentheses: fields start after the last ")".
        return int(stat.rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def exited(pid: int) -> bool:
    """Whether the process has ended: gone, or a zombie its parent has not reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return not pid_alive(pid)
    return stat.rsplit(b")", 1)[1].split()[:1] == [b"Z"]


def owner_mark(pid: int | None = None) -> str:
    """``PID.START`` for ``pid`` (this process by default), or ``PID`` when its start is unread."""
    if pid is None or pid == os.getpid():
        # This process's own start never changes (a forked child has a pid of its own):
        # read once, not at every session's workspace and jail folder.
        pid = os.getpid()
        if pid not in _OWN_MARKS:
            ticks = start_ticks(pid)
            if ticks is None:
                return str(pid)
            _OWN_MARKS[pid] = f"{pid}.{ticks}"
        return _OWN_MARKS[pid]
    ticks = start_ticks(pid)
    return str(pid) if ticks is None else f"{pid}.{ticks}"


_OWN_MARKS: dict[int, str] = {}


def owner_gone(mark: str) -> bool:
    """Whether the process a :func:`owner_mark` names has ended.

    A mark this module did not make is never gone (left alone). A bare pid,
    from before marks had a start, counts as alive while its number lives,
    except this process's own number: its own marks carry a start, so a bare
    one is a predecessor's.
    """
    pid, _, started = mark.partition(".")
    if not pid.isdigit() or (started and not started.isdigit()):
        return False
    if not pid_alive(int(pid)):
        return True
    if not started and int(pid) != os.getpid():
        return False
    ticks = start_ticks(int(pid))
    # A live number whose start cannot be read (another user's, under hidepid) is kept.
    return ticks is not None and started != str(ticks)
