"""Codex's state database in a resumed session's home: its transcripts' paths made its own.

Codex finds the transcript (rollout) of a thread it resumes through
``$CODEX_HOME/state_*.sqlite``, which keeps each rollout's absolute path. A
resumed session runs in a copy of its parent's home: in the jail the home
always shows at one path, so the copy's paths stay true; unjailed, they name
the parent's home, and Codex would read and append to the parent's
transcript (and fail once that home is pruned). Before an unjailed resume,
every rollout path the copy holds is pointed at the copy's own file.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path, PurePosixPath

#: The folder of ``$CODEX_HOME`` that holds the rollouts (``sessions/YYYY/MM/DD/...``).
SESSIONS = "sessions"
SIDE_FILES = ("", "-wal", "-shm")


def own_rollout(path: str, codex_home: Path) -> Path | None:
    """Where the rollout ``path`` (of any ``CODEX_HOME``) lies in ``codex_home``, if it does."""
    parts = PurePosixPath(path).parts
    if SESSIONS not in parts:
        return None
    tail = parts[len(parts) - 1 - parts[::-1].index(SESSIONS) :]
    own = codex_home.joinpath(*tail)
    return own if own.is_file() and not own.is_symlink() else None


def adopt_rollouts(codex_home: Path) -> int:
    """Point the rollout paths of ``codex_home``'s state databases at its own files.

    Returns how many were changed. A database that is a link, or that SQLite
    cannot read, is left alone: Codex then says itself what it cannot find.
    """
    changed = 0
    for database in sorted(codex_home.glob("state_*.sqlite")):
        if any(Path(f"{database}{side}").is_symlink() for side in SIDE_FILES):
            continue
        with contextlib.suppress(sqlite3.Error):
            changed += _adopt(database, codex_home)
    return changed


def _adopt(database: Path, codex_home: Path) -> int:
    connection = sqlite3.connect(f"file:{database}?mode=rw", uri=True, timeout=5)
    try:
        connection.execute("PRAGMA trusted_schema = OFF")
        rows = connection.execute("SELECT id, rollout_path FROM threads").fetchall()
        moves = []
        for thread, path in rows:
            own = own_rollout(str(path), codex_home)
            if own is not None and str(own) != path:
                moves.append((str(own), thread))
        with connection:
            connection.executemany("UPDATE threads SET rollout_path = ? WHERE id = ?", moves)
        return len(moves)
    finally:
        connection.close()
