"""Repositories a jail's runtime leaves where the owner's git runs, disarmed.

A runtime may leave a ``.git`` (or a bare repository) anywhere it can write; the
owner's git, run there later outside any jail, would obey its hooks and config.
Each jail looks at the folders it guards when it ends (``Jail.disarm_left``), and
a starting daemon looks at its butler folder for what an earlier one could not
(docs/security.md, "Repositories a session leaves"). The look itself is
``security/repositories.py``; this is when it runs and how it is told.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from butler.sandbox.git_view import BUTLER_FOLDER_KEEPS
from butler.security.repositories import Look, disarm

log = logging.getLogger("butler.sandbox")


async def look_after(folder: Path, keep: tuple[str, ...], who: str) -> Look | None:
    """Disarm the repositories left below ``folder`` but ``keep`` (off the event loop),
    each logged as ``who: ...``; None when the look itself failed (logged)."""
    try:
        look = await asyncio.to_thread(disarm, folder, keep)
    except Exception:  # the look is a guard; whatever called it must still end
        log.exception("could not look for repositories left in %s", folder)
        return None
    for line in look.lines():
        log.warning("%s: %s", who, line)
    return look


async def look_after_butler_folder(folder: Path) -> Look | None:
    """At a daemon's start: disarm what jails of an earlier one left in the butler folder
    (one that died before its jails' ends were looked at, a builder that ended unseen)."""
    return await look_after(folder, BUTLER_FOLDER_KEEPS, "left before this start")
