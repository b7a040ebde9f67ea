"""Reading the file a session attaches: inside the butler's folder, bounded, no link followed.

The session's runtime writes the butler's folder, so the path it names is
its own data: a link there (to the owner's keys, to ``/dev/zero``) or a
FIFO must not make the daemon read something else or hang. So it is read
through :mod:`butler.security.untrusted`, the one reader of what a runtime
can write: no link followed on the way, only a regular file, at most the bound.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from butler.notify.channels import NotifyRefused
from butler.notify.message import Attachment
from butler.security import untrusted

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
    try:
        content = untrusted.read(folder, path, limit + 1, whole=False)
    except FileNotFoundError:
        raise NotifyRefused(f"{refused}: no such file in the butler's folder") from None
    except untrusted.FileRefused as exc:
        raise NotifyRefused(
            f"{refused} refused ({exc}); links are not followed, only a regular file is read"
        ) from None
    except OSError as exc:
        raise NotifyRefused(f"{refused} cannot be read ({exc.strerror})") from None
    if len(content) > limit:
        raise NotifyRefused(
            f"{refused} is over {limit} bytes; expected at most {limit} "
            "([butler.notify] max_attachment_bytes)"
        )
    return Attachment(attachment_name(path), content)
