"""Walking a whole folder a runtime can write, as :mod:`butler.security.untrusted` reads it.

For a look over everything below a folder (the repositories a session left
in its butler folder, what a builder left in its repository's ``.git``):
no link is followed or entered, each folder is opened from its parent's
descriptor, and the walk is bounded in entries and depth, so a tree a
runtime made to be large or deep costs a bounded look and says it stopped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from butler.security.untrusted import Refused, folder

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Unfinished(Refused):
    """A :func:`walk` stopped at its bound: more entries, or deeper folders, than it may look at."""


def kind_of(entry: os.DirEntry[str]) -> str:
    """``"dir"``, ``"file"``, ``"link"`` or ``"other"`` (a FIFO, a socket, a device): what
    ``entry`` is itself, never what a link names."""
    try:
        if entry.is_symlink():
            return "link"
        if entry.is_dir(follow_symlinks=False):
            return "dir"
        return "file" if entry.is_file(follow_symlinks=False) else "other"
    except OSError:
        return "other"


def walk(
    root: Path, start: str | PurePosixPath = "", *, max_entries: int, max_depth: int
) -> Iterator[tuple[PurePosixPath, dict[str, str]]]:
    """``(folder, {name: kind})`` for ``root/start`` and each real folder below it, top down,
    as ``os.walk`` does: a name the caller deletes from the dict is not entered.

    Kinds are :func:`kind_of`'s. No link is followed or entered; each folder is opened
    from its parent's descriptor (one swapped for a link meanwhile is passed over).
    Raises :class:`Unfinished` past ``max_entries`` entries in all or ``max_depth``
    folders below ``start``: what was yielded before stands, the rest was not seen.
    """
    budget = [max_entries]
    with folder(root, start) as fd:
        yield from _walk(fd, PurePosixPath(start), budget, max_depth)


def _walk(
    fd: int, where: PurePosixPath, budget: list[int], depth: int
) -> Iterator[tuple[PurePosixPath, dict[str, str]]]:
    kinds: dict[str, str] = {}
    with os.scandir(fd) as entries:
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                raise Unfinished(f"{where}: more entries than the walk may look at")
            kinds[entry.name] = kind_of(entry)
    yield where, kinds
    for name in sorted(n for n, kind in kinds.items() if kind == "dir"):
        if depth <= 0:
            raise Unfinished(f"{where / name}: deeper than the walk may go")
        try:
            inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            continue  # gone, or swapped for a link since it was listed
        try:
            yield from _walk(inner, where / name, budget, depth - 1)
        finally:
            os.close(inner)
