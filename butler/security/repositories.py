"""Git repositories a runtime left where the owner's git runs, disarmed before it does.

A session writes its butler folder and a builder its worktree; the owner's
own git, outside any jail, later runs there. Git obeys the repository it
finds: a ``.git`` folder's ``config`` (``core.fsmonitor`` runs at every
``git status``), its hooks, a ``.git`` file naming a git folder anywhere, a
folder shaped as a bare repository (``git log`` there runs its
``core.pager``). So when a jail that could write such a folder ends, and when
the daemon starts, every repository below the folder is disarmed
(:func:`disarm`), at any depth:

- a folder git would take for a git folder (it holds ``HEAD``, and
  ``objects`` or ``commondir``: a ``.git`` folder, a bare repository, a
  submodule's or worktree's git folder) has its ``HEAD`` renamed to
  ``HEAD.disarmed``: git takes a folder without ``HEAD`` for no repository,
  as it passes over the empty ``.git`` a jail holds in a butler folder;
- an entry named ``.git`` that is not a folder (a file naming a git folder,
  a link) is renamed to ``.git.disarmed``.

Nothing is deleted or read: the repository's content stays where it was, and
the owner, told on the session's row, renames it back after reading its
``config`` and hooks, if they want it. The caller names what to keep (the
butler folder's own ``.git``, held read-only in every jail; a builder's
worktree pointer, which the daemon wrote). The look is bounded
(:data:`MAX_ENTRIES`, :data:`MAX_DEPTH`) and follows no link; where it
stopped is said.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from butler.security import untrusted, untrusted_walk

#: What a disarmed entry's new name ends with.
SUFFIX = ".disarmed"
#: Most entries looked at below one folder; past it the look stops and says so.
MAX_ENTRIES = 200_000
#: Deepest folder looked into below it.
MAX_DEPTH = 128
#: Names beside ``HEAD`` that make a folder one git takes for a git folder.
GIT_FOLDER_MARKS = ("objects", "commondir")


@dataclass(frozen=True)
class Disarmed:
    """One entry renamed so that no git obeys the repository it made."""

    #: The entry as it was named (``.../reports/.git/HEAD``, ``.../notes/.git``).
    path: Path
    #: Its name now, in the same folder.
    now: str

    def to_dict(self) -> dict[str, str]:
        return {"path": str(self.path), "now": self.now}


@dataclass
class Look:
    """What one look over a folder found and did."""

    folder: Path
    disarmed: list[Disarmed] = field(default_factory=list)
    #: Entries that could not be renamed, each with why.
    failed: list[str] = field(default_factory=list)
    #: Why the look stopped before it saw everything, if it did.
    unfinished: str | None = None

    @property
    def noteworthy(self) -> bool:
        return bool(self.disarmed or self.failed or self.unfinished)

    def lines(self) -> list[str]:
        """One line per finding, for a log or a row."""
        found = [f"{d.path}: renamed to {d.now}, so no git obeys it" for d in self.disarmed]
        found += [f"{line}: could not be disarmed" for line in self.failed]
        if self.unfinished:
            found.append(f"{self.folder}: not looked at whole ({self.unfinished})")
        return found


def disarm(root: Path, keep: Sequence[str] = ()) -> Look:
    """Disarm every repository below ``root`` (``root`` itself included), but the
    entries ``keep`` names (paths relative to ``root``, ``*`` for one name: ``.git``,
    ``.builders/*/.git``), which are neither renamed nor entered unless they are links."""
    look = Look(root)
    unread: list[PurePosixPath] = []
    try:
        for where, kinds in untrusted_walk.walk(
            root, max_entries=MAX_ENTRIES, max_depth=MAX_DEPTH, unread=unread
        ):
            # A link is never kept: the runtime may have swapped in where a kept entry was.
            for name in [n for n in kinds if kinds[n] != "link" and _kept(where / n, keep)]:
                del kinds[name]
            if _is_git_folder(kinds):
                _rename(look, root, where / "HEAD")
            if ".git" in kinds and kinds[".git"] != "dir":
                _rename(look, root, where / ".git")
    except untrusted_walk.Unfinished as exc:
        look.unfinished = str(exc)
    except OSError as exc:  # the folder itself is gone or no folder: nothing to disarm
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            look.unfinished = f"cannot be read: {exc.strerror or exc}"
    if unread and look.unfinished is None:  # another user's folders: said, not passed over
        more = f" (and {len(unread) - 1} more)" if len(unread) > 1 else ""
        look.unfinished = f"{unread[0]} cannot be read{more}"
    return look


def _kept(path: PurePosixPath, keep: Sequence[str]) -> bool:
    parts = path.parts
    for pattern in keep:
        wanted = PurePosixPath(pattern).parts
        if len(wanted) == len(parts) and all(map(fnmatch.fnmatchcase, parts, wanted)):
            return True
    return False


def _is_git_folder(kinds: dict[str, str]) -> bool:
    """Whether a folder holding ``kinds`` is one git would take for a git folder."""
    head = kinds.get("HEAD")
    return head is not None and head != "dir" and any(m in kinds for m in GIT_FOLDER_MARKS)


def _rename(look: Look, root: Path, relative: PurePosixPath) -> None:
    """Rename ``root/relative`` beside itself to a free ``<name>.disarmed[-N]``; past a
    few names taken (a runtime may take them all first), a name no one can guess."""
    names = [f"{relative.name}{SUFFIX}", f"{relative.name}{SUFFIX}-2"]
    names += [f"{relative.name}{SUFFIX}-{secrets.token_hex(4)}" for _ in range(8)]
    for now in names:
        try:
            _rename_writable(root, relative, now)
        except FileExistsError:
            continue
        except OSError as exc:
            look.failed.append(f"{root / relative} ({exc.strerror or exc})")
            return
        look.disarmed.append(Disarmed(root / relative, now))
        return
    look.failed.append(f"{root / relative} (no free name beside it)")


def _rename_writable(root: Path, relative: PurePosixPath, now: str) -> None:
    """:func:`untrusted.rename`; a folder the runtime made read-only is made writable by
    its owner first (the daemon's user owns what its jails wrote)."""
    try:
        untrusted.rename(root, relative, now)
    except PermissionError:
        with untrusted.folder(root, relative.parent) as fd:
            mode = stat.S_IMODE(os.fstat(fd).st_mode)
            with contextlib.suppress(OSError):
                os.chmod(fd, mode | stat.S_IRWXU)
        untrusted.rename(root, relative, now)
