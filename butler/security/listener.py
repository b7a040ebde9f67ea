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


def listener_uids(port: int, tables: tuple[Path, ...] = TABLES) -> set[int] | None:
    """The uids of every socket listening on ``port`` (any address); None if unreadable."""
    uids: set[int] = set()
    try:
        for table in tables:
            if not table.exists():
                continue
            for line in table.read_text(encoding="ascii").splitlines()[1:]:
                fields = line.split()
                local, state, uid = fields[1], fields[3], fields[7]
                if state == LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                    uids.add(int(uid))
    except (OSError, ValueError, IndexError):
        return None
    return uids


def held_by_me(port: int) -> bool | None:
    """True if only this user's (or root's) processes listen on ``port``; None if none does.

    Root may: it reads the token file anyway, and a container's published port
    is held by root's ``docker-proxy``.
    """
    uids = listener_uids(port)
    if not uids:
        return None if uids is not None else False
    return uids <= {os.geteuid(), 0}
