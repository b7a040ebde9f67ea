"""Reading files a jailed runtime controls: bounded, never through a link.

The runtime writes its own home and its worktree (repository content earlier
builders committed): a FIFO there would hang a reader, a link to ``/dev/zero``
or to ``/`` would flood it, a huge file would fill the daemon's memory. The
daemon reads such files only through :func:`read`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def regular(path: Path) -> bool:
    """A regular file itself, not a link, FIFO or device."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read(path: Path, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a regular file, never through a link; None for
    anything else (missing, a link, a FIFO, a device, a folder)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read(limit)
