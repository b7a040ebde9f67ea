"""Walking a whole folder a runtime can write, as :mod:`butler.security.untrusted` reads it.

For a look over everything below a folder (the repositories a session left
in its butler folder, what a builder left in its repository's ``.git``):
no link is followed or entered, each folder is opened from its parent's
descriptor, and the walk is bounded in entries and depth, so a tree a
runtime made to be large or deep costs a bounded look and says it stopped.
A folder the runtime closed to its owner is opened to its owner (the
daemon's user) to be looked into, never passed over unsaid.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from butler.security.untrusted import FileRefused, folder

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Unfinished(FileRefused):
    """A :func:`walk` stopped at its bound: more entries, or deeper folders, than it may look at."""


class Unreadable(Unfinished):
    """A folder below the root that cannot be opened, even to its owner (another user's)."""


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
    root: Path,
    start: str | PurePosixPath = "",
    *,
    max_entries: int,
    max_depth: int,
    unread: list[PurePosixPath] | None = None,
) -> Iterator[tuple[PurePosixPath, dict[str, str]]]:
    """``(folder, {name: kind})`` for ``root/start`` and each real folder below it, top down,
    as ``os.walk`` does: a name the caller deletes from the dict is not entered.

    Kinds are :func:`kind_of`'s. No link is followed or entered; each folder is opened
    from its parent's descriptor (one swapped for a link meanwhile is passed over).
    Raises :class:`Unfinished` past ``max_entries`` entries in all or ``max_depth``
    folders below ``start``: what was yielded before stands, the rest was not seen.
    A folder that cannot be opened even to its owner raises :class:`Unreadable`, or
    with ``unread`` is added to it and passed over, the walk going on.
    """
    budget = [max_entries]
    with folder(root, start) as fd:
        yield from _walk(fd, PurePosixPath(start), budget, max_depth, unread)


def _walk(
    fd: int,
    where: PurePosixPath,
    budget: list[int],
    depth: int,
    unread: list[PurePosixPath] | None,
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
            inner = _enter(fd, name, where / name)
        except Unreadable:
            if unread is None:
                raise
            unread.append(where / name)
            continue
        if inner is None:
            continue  # gone, or swapped for a link since it was listed
        try:
            yield from _walk(inner, where / name, budget, depth - 1, unread)
        finally:
            os.close(inner)


def _enter(fd: int, name: str, where: PurePosixPath) -> int | None:
    """The folder ``name`` below ``fd``, opened to list; None when it is gone or a link.

    A folder closed to its owner is opened to its owner first: the daemon's user owns
    what its jails wrote, and a runtime may ``chmod`` it. ``chmod 100`` leaves a folder
    passable to the owner's git (which needs its search bit only) but not listable, so
    passed over, it hid a repository from the look. Raises :class:`Unreadable` when it
    still cannot be read (another user's), so that is said rather than passed over.
    """
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except PermissionError:
        pass
    except OSError:
        return None
    try:
        _open_to_owner(fd, name)
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise Unreadable(f"{where}: cannot be read ({exc.strerror or exc})") from None


def _open_to_owner(fd: int, name: str) -> None:
    """Give the folder ``name`` below ``fd`` its owner's read, write and search bits, when
    this user owns it; through a descriptor of the folder itself (``O_PATH``, which needs
    no permission on it), so no link is followed."""
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    try:
        found = os.fstat(handle)
        if found.st_uid == os.geteuid():
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(found.st_mode) | stat.S_IRWXU)
    finally:
        os.close(handle)
