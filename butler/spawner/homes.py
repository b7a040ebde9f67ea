"""Runtime homes: a private one per session, kept a while so the session can be resumed.

(A runtime that cannot resume has its session's home removed when the session
ends: kept, it would only fill the data folder.)

Every runtime writes state into its home (transcripts, sessions, logins), and
concurrent sessions sharing one home corrupt it. So each session gets
``<butler's data folder>/homes/<session>/`` (butler.paths), seeded from the
butler's home seed ``<butler's data folder>/home/`` (where an owner may log a CLI in), or on
resume from the parent session's home.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from butler.paths import Install, butler_dir

#: Days a session's runtime home is kept (so the session can be resumed) after its last use.
HOME_KEEP_DAYS = 30


def session_home(butler: Install, session_id: str, parent_id: str | None = None) -> Path:
    """A fresh home for one session, seeded from the butler's or the parent's."""
    folder = butler_dir(butler)  # once: it claims the folder (a file read) every call
    homes = folder / "homes"
    home = homes / session_id
    seed = homes / parent_id if parent_id else folder / "home"
    if seed.is_dir():
        shutil.copytree(seed, home, symlinks=True, dirs_exist_ok=True)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Its age is its own from now: the copy took the seed's time, and a seed an owner
    # logged a CLI into months ago made every new home look past keeping, so the next
    # start's prune (or a worker's on this machine) removed it while its session ran.
    os.utime(home)
    return home


def discard_home(butler: Install, session_id: str) -> None:
    """Remove one session's home now: its runtime cannot resume, so nothing will read it."""
    shutil.rmtree(butler_dir(butler) / "homes" / session_id, ignore_errors=True)


def prune_homes(butler: Install, keep_days: float = HOME_KEEP_DAYS) -> list[Path]:
    """Remove session homes untouched for ``keep_days``; their sessions can no longer resume."""
    homes = butler_dir(butler) / "homes"
    cutoff = time.time() - keep_days * 86400
    removed = []
    for home in homes.iterdir() if homes.is_dir() else []:
        try:
            stale = home.is_dir() and home.stat().st_mtime < cutoff
        except OSError:  # removed meanwhile (its session ended and could not resume)
            continue
        if stale:
            shutil.rmtree(home, ignore_errors=True)
            removed.append(home)
    return removed
