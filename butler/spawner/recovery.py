"""A starting daemon cleans up after one that died: its runtimes, rows and temp folders.

Done before the server accepts. Runtimes a dead daemon left running are
killed (their workspaces go only after: a workspace is removed once nothing
uses it), outcomes its journal kept are written, rows it left open are
failed with the reason, and workspaces, jail folders and old homes are swept.
(A builder's runtime is no orphan: it lives in tmux, and its row is adopted
again once it is found running.)
"""

from __future__ import annotations

import logging

from butler.spawner.orphans import reap_orphans
from butler.spawner.spawner import Spawner

log = logging.getLogger(__name__)

LEFT_OPEN = "the daemon stopped while this session was open"


async def recover(spawner: Spawner) -> None:
    """Clean up after an earlier daemon of this butler; one log line says what was done."""
    reaped = await reap_orphans(spawner.sessions)
    replayed = await spawner.completions.replay()
    if replayed:
        log.info("completions replayed from the journal", extra={"sessions": replayed})
    closed = await spawner.sessions.fail_unfinished(LEFT_OPEN)
    swept = spawner.sweep()
    if closed or swept or reaped:
        log.info(
            "recovered from an earlier crash",
            extra={"sessions": closed, "temp": len(swept), "runtimes_killed": reaped},
        )
