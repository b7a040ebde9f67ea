"""A starting daemon cleans up after one that died: its runtimes, rows and temp folders.

Done before the server accepts. Runtimes a dead daemon left running are
killed (their workspaces go only after: a workspace is removed once nothing
uses it), outcomes its journal kept are written, sessions it handed to workers are
waited for again (:mod:`.handed_over`), the other rows it left open are
failed with the reason, and workspaces, jail folders and old homes are swept,
as are the homes of its sessions whose runtime cannot resume (the session's
own end would have removed them).
(A builder's runtime is no orphan: it lives in tmux, and its row is adopted
again once it is found running.)
"""

from __future__ import annotations

import logging

from butler.runtimes.registry import adapter_class
from butler.spawner.homes import discard_home
from butler.spawner.orphans import reap_orphans
from butler.spawner.spawner import Spawner

log = logging.getLogger(__name__)

LEFT_OPEN = "the daemon stopped while this session was open"


async def recover(spawner: Spawner) -> None:
    """Clean up after an earlier daemon of this butler; one log line says what was done."""
    orphans = await reap_orphans(spawner.sessions)
    for session_id, runtime in orphans.sessions:
        if not _resumable(runtime, spawner):
            discard_home(spawner.config, session_id)
    replayed = await spawner.completions.replay()
    if replayed:
        log.info("completions replayed from the journal", extra={"sessions": replayed})
    handed = await spawner.handed_over.take_over()
    closed = await spawner.sessions.fail_unfinished(LEFT_OPEN, keep=handed)
    swept = spawner.sweep()
    if closed or swept or orphans.killed or handed:
        log.info(
            "recovered from an earlier crash",
            extra={
                "sessions": closed,
                "sessions_on_workers": len(handed),
                "temp": len(swept),
                "runtimes_killed": orphans.killed,
            },
        )


def _resumable(runtime: str, spawner: Spawner) -> bool:
    """Whether a session of ``runtime`` may be resumed later (then its home is kept)."""
    try:
        return adapter_class(runtime, spawner.config.roster_dir).supports_resume
    except ValueError:
        return True  # a runtime no longer known: keep its home, the age sweep takes it
