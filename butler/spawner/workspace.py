"""The ephemeral workspace of one invocation: a private temp folder.

``<system temp>/butler_<name>_<owner>_<uuid>/`` (0700) holds what the
runtime's adapter asks for: its MCP config, prompt files, launch spec. The
folder is removed when the invocation ends, however it ends; leftovers of a
crashed daemon are swept at start-up.

The owner (pid and start time, butler/processes.py) is in the folder's name,
not in a file inside it: a name is there the instant the folder is, so a
sweep running meanwhile (a worker of the same butler, another daemon's
start) never takes a folder being made for one without an owner, and the
runtime, which can write its workspace but not rename it, cannot change it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from butler.errors import ButlerError
from butler.processes import owner_gone, owner_mark
from butler.runtimes.mcp_config import write_files
from butler.security import untrusted
from butler.security.private_files import write_private

#: Where workspaces made before the owner was in the name (upgrades) name it.
OWNER_FILE = ".owner-pid"
#: Where a session's files (a chat message's attachments) are placed in its workspace.
FILES_DIR = "files"
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: ``..._<owner mark>_<uuid>`` (or ``...-<owner mark>_<uuid>``: ``butler-ask-``) at the
#: end of a workspace's name. Anchored at the end, not after the sweep's prefix: the
#: sweep of butler "foo" also sees the workspaces of butler "foo_bar".
_OWNED_NAME = re.compile(r"[_-](\d+(?:\.\d+)?)_[0-9a-f]{8}-[0-9a-f-]{27}$")


@dataclass(frozen=True)
class SessionFile:
    """A file given to one session to read (an attachment), placed in its workspace."""

    #: A plain file name chosen by the caller: no folder, no leading dot.
    name: str
    data: bytes
    #: What it is, for the runtime (e.g. "photo, image/jpeg"); data, never a path.
    note: str = ""

    def __post_init__(self) -> None:
        if not _FILE_NAME.fullmatch(self.name) or ".." in self.name:
            raise ValueError(f"session file name {self.name[:40]!r}: expected a plain file name")

    def to_json(self) -> dict[str, str]:
        """The file as JSON, for a session handed to a worker (docs/scaling.md)."""
        return {"name": self.name, "note": self.note, "data": base64.b64encode(self.data).decode()}

    @classmethod
    def from_json(cls, entry: dict[str, str]) -> SessionFile:
        """The file :meth:`to_json` gave; ValueError for anything else."""
        try:
            data = base64.b64decode(entry["data"], validate=True)
            return cls(str(entry["name"]), data, str(entry.get("note") or ""))
        except (KeyError, TypeError, binascii.Error) as exc:
            raise ValueError(f"a session file as JSON: {exc}") from None


def temp_root() -> Path:
    return Path(tempfile.gettempdir())


class Workspace:
    """A private temp folder for one invocation, removed on exit."""

    def __init__(self, prefix: str, owner: str | None = None) -> None:
        self.prefix = prefix
        self.path = temp_root() / f"{prefix}{owner or owner_mark()}_{uuid.uuid4()}"

    def create(self) -> Workspace:
        """Make the folder; when that fails (a full temp folder), leave nothing of it."""
        try:
            self.path.mkdir(mode=0o700)
        except OSError as exc:
            raise self._no_room(exc) from None
        return self

    def write(self, files: Mapping[Path, str]) -> None:
        """Write the config files a runtime asked for (paths inside this workspace)."""
        with self._room():
            write_files(files, (self.path,))

    def place(self, files: Sequence[SessionFile]) -> str:
        """Write ``files`` under ``files/``; the lines that tell the runtime where they are."""
        if not files:
            return ""
        folder = self.path / FILES_DIR
        lines = ["", "", "Files that came with this message, for you to read:"]
        with self._room():
            folder.mkdir(mode=0o700)
            for file in files:
                path = folder / file.name
                # A name given twice is refused, never overwritten.
                write_private(path, file.data, how="exclusive")
                note = f" ({file.note})" if file.note else ""
                lines.append(f"- {path}{note}")
        return "\n".join(lines)

    @contextlib.contextmanager
    def _room(self) -> Iterator[None]:
        """A temp folder that fills up while the workspace is written is named as such:
        the fix is the user's (room, or TMPDIR), not a fault of butler's."""
        try:
            yield
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise self._no_room(exc) from None

    def _no_room(self, exc: OSError) -> ButlerError:
        return ButlerError(
            f"cannot create the session's workspace in {self.path.parent}: "
            f"{os.strerror(exc.errno) if exc.errno else exc}; "
            "free space there or set TMPDIR to a folder with room"
        )

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _owner_alive(folder: Path) -> bool:
    # Named by pid and start time: a daemon restarted in a container has the pid of the
    # one killed before, whose workspaces are not its own.
    owned = _OWNED_NAME.search(folder.name)
    # A bare pid there may be the end of a butler's name ("foo_7") in a workspace made
    # before the upgrade: its owner file, when there is one, says whose it is.
    if owned and ("." in owned.group(1) or not os.path.lexists(folder / OWNER_FILE)):
        return not owner_gone(owned.group(1))
    # A workspace made before the owner was in its name: the runtime could write it, so
    # its owner file is data, read bounded and never through a link (a FIFO or
    # /dev/zero there would hold the sweep forever).
    try:
        mark = (untrusted.read_or_none(folder, OWNER_FILE, 32) or b"").decode("ascii").strip()
    except (OSError, ValueError):
        return False
    return mark.replace(".", "", 1).isdigit() and not owner_gone(mark)


def sweep_leftovers(prefix: str) -> list[Path]:
    """Remove workspaces named ``prefix*`` whose owning process is gone."""
    removed: list[Path] = []
    for folder in temp_root().glob(f"{prefix}*"):
        if folder.is_dir() and not _owner_alive(folder):
            with contextlib.suppress(OSError):
                shutil.rmtree(folder)
                removed.append(folder)
    return removed
