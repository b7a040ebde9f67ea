"""Who listens on a local TCP port: the owner's token goes only to the owner's own process.

A butler that is down leaves its port free, and any local user may listen
there; a client that sends the owner token to whatever answers would hand
it over. Linux lists every socket with the uid that opened it in
``/proc/net/tcp`` and ``/proc/net/tcp6``.
"""

from __future__ import annotations

import os
from pathlib import Path

TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
LISTEN = "0A"


def _listening(port: int, tables: tuple[Path, ...]) -> list[tuple[int, int]] | None:
    """(uid, socket inode) of every socket listening on ``port``; None if unreadable."""
    found: list[tuple[int, int]] = []
    try:
        for table in tables:
            if not table.exists():
                continue
            for line in table.read_text(encoding="ascii").splitlines()[1:]:
                fields = line.split()
                local, state, uid, inode = fields[1], fields[3], fields[7], fields[9]
                if state == LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                    found.append((int(uid), int(inode)))
    except (OSError, ValueError, IndexError):
        return None
    return found


def listener_uids(port: int, tables: tuple[Path, ...] = TABLES) -> set[int] | None:
    """The uids of every socket listening on ``port`` (any address); None if unreadable."""
    found = _listening(port, tables)
    return None if found is None else {uid for uid, _ in found}


def listener_pids(port: int, proc: Path = Path("/proc")) -> set[int]:
    """The processes holding a socket that listens on ``port``, of those this user may see.

    A process is found by its open files (``/proc/PID/fd``), which only its
    owner and root can read: another user's listener is known by its uid alone.
    """
    inodes = {f"socket:[{inode}]" for _, inode in _listening(port, TABLES) or []}
    pids: set[int] = set()
    if not inodes:
        return pids
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                pids.add(int(entry.name))
        except OSError:
            continue  # not ours to read, or gone meanwhile
    return pids


def held_by_me(port: int) -> bool | None:
    """True if only this user's (or root's) processes listen on ``port``; None if none does.

    Root may: it reads the token file anyway, and a container's published port
    is held by root's ``docker-proxy``.
    """
    uids = listener_uids(port)
    if not uids:
        return None if uids is not None else False
    return uids <= {os.geteuid(), 0}
