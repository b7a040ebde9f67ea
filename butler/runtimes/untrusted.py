"""Reading files a jailed runtime controls: bounded, never through a link.

The runtime writes its own home and its worktree (repository content earlier
builders committed): a FIFO there would hang a reader, a link to ``/dev/zero``
or to ``/`` would flood it, a huge file would fill the daemon's memory. The
daemon reads such files only through :func:`read` and finds them only with
:func:`find`.
"""

from __future__ import annotations

import os
import stat
from fnmatch import fnmatchcase
from pathlib import Path

#: Deepest folder :func:`find` descends to under its start, whatever the pattern.
MAX_DEPTH = 16


def unlinked(path: Path, parents: int) -> bool:
    """Neither ``path`` nor its ``parents`` nearest folders is a link (missing ones count
    as links): for a path the runtime built below its home, such as ``.local/share``
    linked to another session's, whose files the daemon would then read as this one's."""
    for place in [path, *path.parents[:parents]]:
        try:
            if stat.S_ISLNK(os.lstat(place).st_mode):
                return False
        except OSError:
            return False
    return True


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


def find(folder: Path, pattern: str, max_entries: int) -> list[tuple[float, Path]]:
    """``(mtime, path)`` of the regular files under ``folder`` matching ``pattern``
    (``/``-separated parts, ``*`` wildcards, ``**`` for any folders).

    Never descends through a linked folder (nor starts at one), looks at no more than
    ``max_entries`` folder entries in all, and stats nothing through a link: a home
    holding ``sessions -> /`` costs a bounded walk, not the whole filesystem.
    """
    found: list[tuple[float, Path]] = []
    # The folder holding ``folder`` is the runtime's too (``.codex`` of ``.codex/sessions``).
    if not _real_dir(folder) or not unlinked(folder.parent, 0):
        return found
    budget = [max_entries]
    pending: list[tuple[Path, tuple[str, ...], int]] = [(folder, tuple(pattern.split("/")), 0)]
    while pending and budget[0] > 0:
        where, parts, depth = pending.pop()
        subfolders: list[tuple[Path, tuple[str, ...]]] = []
        try:
            with os.scandir(where) as entries:
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] < 0:
                        break
                    _match(entry, parts, found, subfolders)
        except OSError:
            continue
        if depth < MAX_DEPTH:
            pending += [(path, rest, depth + 1) for path, rest in subfolders]
    return found


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _match(entry: os.DirEntry[str], parts: tuple[str, ...], found: list[tuple[float, Path]],
           subfolders: list[tuple[Path, tuple[str, ...]]]) -> None:  # fmt: skip
    """Record ``entry`` if it completes ``parts``, queue it if it is a real folder that may."""
    head, rest = parts[0], parts[1:]
    try:
        if head == "**":
            if rest:
                _match(entry, rest, found, subfolders)  # ``**`` standing for no folder
            if entry.is_dir(follow_symlinks=False):
                subfolders.append((Path(entry.path), parts))
        elif fnmatchcase(entry.name, head):
            if not rest and entry.is_file(follow_symlinks=False):
                found.append((entry.stat(follow_symlinks=False).st_mtime, Path(entry.path)))
            elif rest and entry.is_dir(follow_symlinks=False):
                subfolders.append((Path(entry.path), rest))
    except OSError:
        return
