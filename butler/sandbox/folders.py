"""The private folder of each jail (its launch scripts, options files, proxy socket).

``<temp>/butler-jail-<random>/`` (0700), named by :func:`new_jail_folder`,
which records the daemon in it by pid and start time (a daemon restarted in a
container has the killed one's pid). A jail's folder goes when the jail
closes; one left by a daemon that was killed (``kill -9``, a crash) is removed
by :func:`sweep_jail_folders` when a daemon starts, once its owner is gone.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from butler.processes import owner_gone, owner_mark

PREFIX = "butler-jail-"
OWNER_FILE = ".owner-pid"  # the name kept from when it held a bare pid
#: A Unix socket's path holds at most 107 bytes: a deep TMPDIR gives way to /tmp.
MAX_ROOT = 60


def jail_root() -> Path:
    """Where jail folders are made."""
    root = tempfile.gettempdir()
    return Path(root if len(root) < MAX_ROOT else "/tmp")


def new_jail_folder() -> Path:
    """A fresh private folder for one jail, recording this process as its owner."""
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=jail_root()))
    (folder / OWNER_FILE).write_text(owner_mark(), encoding="utf-8")
    return folder


def sweep_jail_folders() -> list[Path]:
    """Remove jail folders whose owning daemon is gone; folders of no known owner stay."""
    removed = []
    for folder in sorted({*jail_root().glob(f"{PREFIX}*"), *Path("/tmp").glob(f"{PREFIX}*")}):
        try:
            owner = (folder / OWNER_FILE).read_text(encoding="utf-8")[:40].strip()
        except (OSError, ValueError):
            continue
        if owner_gone(owner):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
