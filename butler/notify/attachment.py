"""Reading the file a session attaches: inside the butler's folder, bounded, no link followed.

The session's runtime writes the butler's folder, so the path it names is
its own data: a link there (to the owner's keys, to ``/dev/zero``) or a
FIFO must not make the daemon read something else or hang. Each folder on
the way is opened relative to the one before with ``O_NOFOLLOW``, the file
too, and only a regular file of at most the bound is read.

(The project's one reader of runtime-writable files is to live in
``butler/security/``; this module switches to it once it exists.)
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path, PurePosixPath

from butler.notify.channels import NotifyRefused
from butler.notify.message import Attachment

#: Longest attachment path a session may give.
MAX_PATH_CHARS = 1024
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def attachment_name(path: PurePosixPath) -> str:
    """The file's name as sent: letters, digits, ``.``, ``_`` and ``-`` only."""
    name = _UNSAFE_NAME.sub("_", path.name).strip("._") or "attachment"
    return name[-100:]


def relative_inside(folder: Path, given: str) -> PurePosixPath:
    """``given`` as a path below ``folder``; NotifyRefused for anything outside it."""
    if not given or len(given) > MAX_PATH_CHARS or "\x00" in given:
        raise NotifyRefused(f"attach: expected a file path of at most {MAX_PATH_CHARS} characters")
    path = PurePosixPath(given)
    if path.is_absolute():
        try:
            path = path.relative_to(PurePosixPath(folder))
        except ValueError:
            raise NotifyRefused(
                f"attach: {given[:100]!r} is outside the butler's folder; expected a file in it"
            ) from None
    if not path.parts or ".." in path.parts:
        raise NotifyRefused(
            f"attach: {given[:100]!r} leaves the butler's folder; expected a file in it"
        )
    return path


def read_attachment(folder: Path, given: str, limit: int) -> Attachment:
    """The file ``given`` (relative to ``folder``, or absolute inside it) as an attachment.

    Blocking: call it in a thread.
    """
    path = relative_inside(folder, given)
    refused = f"attach: {given[:100]!r}"
    fds: list[int] = []
    try:
        fds.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        for part in path.parts[:-1]:
            flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            fds.append(os.open(part, flags, dir_fd=fds[-1]))
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fds.append(os.open(path.parts[-1], flags, dir_fd=fds[-1]))
        info = os.fstat(fds[-1])
        if not stat.S_ISREG(info.st_mode):
            raise NotifyRefused(f"{refused} is not a regular file; expected one")
        if info.st_size > limit:
            raise NotifyRefused(
                f"{refused} is {info.st_size} bytes; expected at most {limit} "
                "([butler.notify] max_attachment_bytes)"
            )
        content = _read_at_most(fds[-1], limit + 1)
    except FileNotFoundError:
        raise NotifyRefused(f"{refused}: no such file in the butler's folder") from None
    except OSError as exc:
        # ELOOP / ENOTDIR: a link on the way, which is never followed.
        raise NotifyRefused(
            f"{refused} cannot be read ({exc.strerror}); links are not followed"
        ) from None
    finally:
        for fd in fds:
            os.close(fd)
    if len(content) > limit:  # it grew while being read
        raise NotifyRefused(f"{refused} is over {limit} bytes; expected at most {limit}")
    return Attachment(attachment_name(path), content)


def _read_at_most(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
