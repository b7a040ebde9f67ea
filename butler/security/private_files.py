"""The one writer of the daemon's private files: tokens, launch specs, runtime configs, journals.

Every file the daemon writes for itself or hands a runtime (a token digest,
a launch spec holding secrets, an MCP config holding a session token, the
completion journal) is written here, the same way:

- never through a link: the last component is opened with ``O_NOFOLLOW``, so
  a link planted where the file should be is refused, never written through
  to whatever it names; a second hard link to an existing file, a FIFO or a
  device is refused too (a FIFO is opened without blocking);
- readable by its owner only from its first byte, ``0600`` whatever the umask
  (``0700`` for a script), an existing file narrowed before it is written;
- ``exclusive`` (a file that exists is an error: nobody planted one first),
  ``truncate`` (the file is replaced in place) or ``append``, by argument;
- folders it has to make are ``0700``.

A leaf: it imports nothing of butler, so every layer (``runtimes/`` too) may
use it. The read half, for files a runtime could have written, is the
untrusted-file module.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

How = Literal["truncate", "exclusive", "append"]

_FLAGS: dict[str, int] = {
    "truncate": os.O_WRONLY | os.O_CREAT,
    "exclusive": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
    "append": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
}
#: Never through a link, never blocking on a FIFO, never inherited by a child.
_ALWAYS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class PrivateFileError(OSError):
    """A private file could not be written safely (a link, a FIFO, a second name)."""


def private_folder(path: Path) -> Path:
    """Make ``path`` and any missing parent, each new one ``0700``; existing ones stay."""
    missing: list[Path] = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue
        os.chmod(folder, 0o700)  # the umask narrowed it, perhaps too far
    return path


def write_private(
    path: Path,
    data: str | bytes,
    *,
    how: How = "truncate",
    executable: bool = False,
    parents: bool = False,
) -> Path:
    """Write ``data`` to ``path``, readable by this user only; return ``path``.

    Raises :class:`PrivateFileError` when ``path`` is a link, not a regular
    file, or a file with other names; ``FileExistsError`` for ``exclusive``
    when it exists.
    """
    if parents:
        private_folder(path.parent)
    mode = 0o700 if executable else 0o600
    try:
        fd = os.open(path, _FLAGS[how] | _ALWAYS, mode)
    except OSError as exc:
        raise _refusal(path, exc) from None
    try:
        _check(fd, path)
        os.fchmod(fd, mode)
        if how == "truncate":
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        raw = data.encode("utf-8") if isinstance(data, str) else data
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return path


def replace_private(path: Path, data: str | bytes) -> Path:
    """Replace ``path`` whole: readers see the old file or the new one, never half of one."""
    spare = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write_private(spare, data)
        os.replace(spare, path)
    except BaseException:
        spare.unlink(missing_ok=True)
        raise
    return path


def _refusal(path: Path, exc: OSError) -> OSError:
    """The error for an ``open`` that failed: a link, a FIFO with no reader, or as it was."""
    if path.is_symlink():
        return PrivateFileError(exc.errno, f"refusing to write through a symbolic link: {path}")
    if exc.errno == getattr(os, "ENXIO", 6):  # a FIFO nobody reads
        return PrivateFileError(exc.errno, f"refusing to write a FIFO: {path}")
    return exc


def _check(fd: int, path: Path) -> None:
    """Refuse what is not a regular file of one name (a device, a FIFO, a hard link)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise PrivateFileError(f"refusing to write {path}: not a regular file")
    if info.st_nlink > 1:
        raise PrivateFileError(f"refusing to write {path}: the file has other names (hard links)")
