"""The daemon's one way to touch files a jailed runtime can write.

The daemon runs outside the jail with the owner's authority; a runtime (or a
builder, or whatever an earlier one committed) writes the butler folder, a
builder's worktree and its repository's ``.git``, session homes and
workspaces. Any file there may be a link to the owner token or to
``/proc/self/environ``, a FIFO that never answers, a link to ``/dev/zero``,
or a folder on the way swapped for a link after it was checked. So every
read and every write there goes through this module (docs/security.md, "The
trust map"):

- the caller names a trusted root (a folder the daemon made or the owner
  chose) and a path relative to it; ``..`` and absolute paths are refused;
- each folder below the root is opened from its parent's descriptor with
  ``O_NOFOLLOW | O_DIRECTORY``: no link is followed anywhere on the path, and
  a folder swapped for a link between two steps is refused, not followed;
- only a regular file is read (opened ``O_NONBLOCK``, so a FIFO cannot hang
  the open, then checked with ``fstat``), at most ``limit`` bytes;
- a write goes to a new file made exclusively beside its target, then renamed
  over it: it never writes through a link, a hard link or a FIFO, and a
  reader never sees half of it.

A leaf: it imports nothing of butler, so the runtimes may use it too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

#: Deepest folder :func:`find` descends to under its start, whatever the pattern.
MAX_DEPTH = 16
#: Most entries :func:`names` lists in one folder.
MAX_NAMES = 10_000

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class FileRefused(OSError):
    """What is at a path may not be used: a link, not a regular file, too big, or a name
    that leaves its folder. ``str()`` is the reason, for a one-line error."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EPERM, reason)

    def __str__(self) -> str:
        return str(self.strerror)


def parts(relative: str | PurePosixPath | Path) -> tuple[str, ...]:
    """The names of ``relative``, each one step down; FileRefused for one that leaves its folder."""
    path = PurePosixPath(relative)
    if path.is_absolute():
        raise FileRefused(f"{relative}: an absolute path; expected a path inside its folder")
    names = tuple(name for name in path.parts if name != ".")
    if ".." in names:
        raise FileRefused(f"{relative}: leaves its folder ('..'); expected a path inside it")
    return names


def _step(fd: int, name: str, create: bool) -> int:
    """The folder ``name`` of the folder ``fd``, opened without following a link."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):  # made meanwhile: opened, or refused, below
            os.mkdir(name, 0o700, dir_fd=fd)
        return _step(fd, name, False)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FileRefused(f"{name}: a link or not a folder; expected a folder") from None
        raise


@contextlib.contextmanager
def folder(
    root: Path, relative: str | PurePosixPath = "", *, create: bool = False
) -> Iterator[int]:
    """A descriptor of the folder ``root/relative``, reached without following a link below
    ``root`` (``root`` itself is trusted); ``create`` makes missing folders (0700)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts(relative):
            inner = _step(fd, name, create)
            os.close(fd)
            fd = inner
        yield fd
    finally:
        os.close(fd)


def _open_regular(dir_fd: int, name: str) -> int:
    """A read descriptor of the regular file ``name``; a link, FIFO, device or folder refused.

    Looked at before it is opened (so no device is ever opened), and again after (so
    one swapped in between is caught); ``O_NONBLOCK`` keeps a FIFO from holding the open.
    """
    if not stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
        raise FileRefused(f"{name}: not a regular file (a link, a FIFO, a device or a folder)")
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(f"{name}: a link; expected a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileRefused(f"{name}: not a regular file (a link, a FIFO, a device or a folder)")
    return fd


def read(root: Path, relative: str | PurePosixPath, limit: int, *, whole: bool = True) -> bytes:
    """The bytes of the regular file ``root/relative``, reached with no link on the way.

    ``whole``: a file larger than ``limit`` is FileRefused; else its first ``limit`` bytes.
    FileNotFoundError when something on the path is missing; FileRefused for a link, a
    FIFO, a device, a folder or a name leaving ``root``.
    """
    *above, name = parts(relative) or ("",)
    if not name:
        raise FileRefused(f"{relative!s}: names no file")
    with folder(root, PurePosixPath(*above)) as dir_fd:
        fd = _open_regular(dir_fd, name)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        if whole:
            raise FileRefused(f"{relative}: larger than {limit} bytes")
        data = data[:limit]
    return data


def read_text(root: Path, relative: str | PurePosixPath, limit: int) -> str:
    """The UTF-8 text of an optional file: ``""`` when it is missing; else as :func:`read`
    (FileRefused for a link, FIFO, device or one larger than ``limit``; UnicodeDecodeError)."""
    try:
        return read(root, relative, limit).decode("utf-8")
    except FileNotFoundError:
        return ""


def read_or_none(root: Path, relative: str | PurePosixPath, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a regular file; None for anything else (missing, a link
    anywhere on the path, a FIFO, a device, a folder, unreadable)."""
    try:
        return read(root, relative, limit, whole=False)
    except OSError:
        return None


def is_file(root: Path, relative: str | PurePosixPath) -> bool:
    """Whether ``root/relative`` is a regular file reached with no link on the way."""
    *above, name = parts(relative) or ("",)
    try:
        with folder(root, PurePosixPath(*above)) as dir_fd:
            found = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(found.st_mode)


def exists(root: Path, relative: str | PurePosixPath) -> bool:
    """Whether anything is at ``root/relative`` (a link counts, as does a link on the way):
    for optional files whose every other form must then be refused, not skipped."""
    *above, name = parts(relative) or ("",)
    try:
        with folder(root, PurePosixPath(*above)) as dir_fd:
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def names(root: Path, relative: str | PurePosixPath = "", limit: int = MAX_NAMES) -> list[str]:
    """The names in the folder ``root/relative`` (at most ``limit``), sorted; ``[]`` when it
    is missing or is no folder reached without a link."""
    try:
        with folder(root, relative) as fd, os.scandir(fd) as entries:
            found = [entry.name for _, entry in zip(range(limit), entries, strict=False)]
    except OSError:
        return []
    return sorted(found)


def regular_names(root: Path, relative: str | PurePosixPath, pattern: str = "*") -> list[str]:
    """The names of the regular files (not links) in ``root/relative`` matching ``pattern``."""
    return [
        name
        for name in names(root, relative)
        if fnmatchcase(name, pattern) and is_file(root, PurePosixPath(relative, name))
    ]


def find(
    root: Path, start: str | PurePosixPath, pattern: str, max_entries: int
) -> list[tuple[float, str]]:
    """``(mtime, path relative to root)`` of the regular files under ``root/start`` that
    match ``pattern`` (``/``-separated parts, ``*`` wildcards, ``**`` for any folders).

    Never enters a link (nor starts through one), looks at no more than
    ``max_entries`` folder entries in all and at most :data:`MAX_DEPTH` folders down:
    a home holding ``sessions -> /`` costs a bounded walk, not the whole filesystem.
    """
    found: list[tuple[float, str]] = []
    budget = [max_entries]
    pending = [(PurePosixPath(start), tuple(pattern.split("/")), 0)]
    while pending and budget[0] > 0:
        where, wanted, depth = pending.pop()
        subfolders: list[tuple[PurePosixPath, tuple[str, ...]]] = []
        try:
            with folder(root, where) as fd, os.scandir(fd) as entries:
                for entry in entries:
                    budget[0] -= 1
                    if budget[0] < 0:
                        break
                    _match(entry, where, wanted, found, subfolders)
        except OSError:
            continue
        if depth < MAX_DEPTH:
            pending += [(path, rest, depth + 1) for path, rest in subfolders]
    return found


def _match(
    entry: os.DirEntry[str],
    where: PurePosixPath,
    wanted: tuple[str, ...],
    found: list[tuple[float, str]],
    subfolders: list[tuple[PurePosixPath, tuple[str, ...]]],
) -> None:
    """Record ``entry`` if it completes ``wanted``, queue it if it is a real folder that may."""
    head, rest = wanted[0], wanted[1:]
    try:
        if head == "**":
            if rest:
                _match(entry, where, rest, found, subfolders)  # ``**`` standing for no folder
            if entry.is_dir(follow_symlinks=False):
                subfolders.append((where / entry.name, wanted))
        elif fnmatchcase(entry.name, head):
            if not rest and entry.is_file(follow_symlinks=False):
                mtime = entry.stat(follow_symlinks=False).st_mtime
                found.append((mtime, str(where / entry.name)))
            elif rest and entry.is_dir(follow_symlinks=False):
                subfolders.append((where / entry.name, rest))
    except OSError:
        return


def rename(root: Path, relative: str | PurePosixPath, new_name: str) -> None:
    """Rename ``root/relative`` to ``new_name`` in the same folder, reached with no link on
    the way; the entry itself is renamed (a link stays a link, never followed).
    ``FileExistsError`` when ``new_name`` is taken."""
    *above, name = parts(relative) or ("",)
    if not name or "/" in new_name or new_name in ("", ".", ".."):
        raise FileRefused(f"{relative!s} -> {new_name}: expected two names in one folder")
    with folder(root, PurePosixPath(*above)) as dir_fd:
        try:
            os.stat(new_name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(name, new_name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return
        raise FileExistsError(errno.EEXIST, f"{new_name}: already there")


def write(root: Path, relative: str | PurePosixPath, data: bytes, mode: int = 0o600) -> None:
    """Put ``data`` at ``root/relative``, making missing folders (0700) on the way.

    Written to a new file beside the target, then renamed over it: whatever was
    there (a link, a hard link to another file, a FIFO) is replaced, never written
    through. A folder at that name is refused.
    """
    *above, name = parts(relative) or ("",)
    if not name:
        raise FileRefused(f"{relative!s}: names no file")
    with folder(root, PurePosixPath(*above), create=True) as dir_fd:
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                raise FileRefused(f"{relative}: a folder; expected a file")
        spare = f".{name}.{secrets.token_hex(6)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(spare, flags, mode, dir_fd=dir_fd)
        try:
            os.fchmod(fd, mode)  # whatever the umask
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.rename(spare, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(spare, dir_fd=dir_fd)
            raise


def write_below(roots: Sequence[Path], path: Path, data: bytes, mode: int = 0o600) -> None:
    """:func:`write` ``path`` below whichever of ``roots`` holds it (a runtime's config file
    in its home or workspace); FileRefused when none does."""
    for root in roots:
        if path.is_relative_to(root):
            write(root, PurePosixPath(path.relative_to(root)), data, mode)
            return
    raise FileRefused(f"{path}: in none of the folders it may be written in")


def add_line(
    root: Path, relative: str | PurePosixPath, line: str, limit: int, mode: int = 0o644
) -> bool:
    """Make the text file ``root/relative`` hold ``line``; True when it had to be added.

    The file is read as :func:`read` reads (a link or FIFO there counts as no file and
    is replaced, never followed) and written as :func:`write` writes.
    """
    try:
        text = read(root, relative, limit).decode("utf-8", "replace")
    except (FileNotFoundError, FileRefused):
        text = ""
    lines = text.splitlines()
    if line in lines:
        return False
    write(root, relative, "\n".join([*lines, line, ""]).encode("utf-8"), mode)
    return True


def make_folders(root: Path, relative: str | PurePosixPath, mode: int = 0o700) -> None:
    """Make ``root/relative`` and the folders above it (0700), following no link below
    ``root``; the last one, when made here, gets ``mode`` exactly (whatever the umask)."""
    *above, name = parts(relative) or ("",)
    with folder(root, PurePosixPath(*above), create=True) as fd:
        if not name:
            return
        made = False
        with contextlib.suppress(FileExistsError):  # made meanwhile: checked below
            os.mkdir(name, 0o700, dir_fd=fd)
            made = True
        inner = _step(fd, name, False)
        try:
            if made:
                os.fchmod(inner, mode)
        finally:
            os.close(inner)
