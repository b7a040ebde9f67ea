"""A repository's ``.git`` as builders share it: made ready for a builder's jail, and
checked for what a builder may have redirected.

A builder's jail may write its repository's objects, the folder of builder
branches and its own worktree's folder (``sandbox/git_view.git_binds``). Git
follows links there, and so does the owner's own git, outside any jail: an
``objects/ab`` folder swapped for a link to a folder elsewhere has the
owner's next commit write its objects there (and every later builder, whose
branch point lives there, fails), a ref or reflog linked elsewhere is read
from there. So the jail binds each folder of ``objects/`` on its own over a
read-only ``objects/`` (none can be replaced), which needs them all made
first (:func:`make_object_folders`); and before the daemon uses a
repository, :func:`redirected` looks for what an earlier builder (or a
jail of an older butler) left: a repository with a link, a FIFO or a
device in its objects, refs, logs or worktrees is refused in one line,
never half used.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from butler.sandbox.git_view import OBJECT_FOLDERS, WORKTREE_CONFIG
from butler.security import untrusted, untrusted_walk

#: The parts of ``.git`` a builder's jail writes (or wrote, before the jail was narrowed).
SHARED = ("objects", "refs", "logs", "worktrees")
#: Most entries looked at: past it a repository is refused as too large to check.
MAX_ENTRIES = 1_000_000
#: Deepest folder looked into (a ref's name may have many parts; objects have two).
MAX_DEPTH = 64


def make_object_folders(repo: Path) -> None:
    """Make every folder of ``.git/objects`` a builder's commits may write, as git would
    (with the mode of ``objects/`` itself, a shared repository's group included), so the
    builder's jail binds each one rather than ``objects/`` whole. Refused for a link."""
    objects = PurePosixPath(".git", "objects")
    with untrusted.folder(repo, objects) as fd:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
    for name in OBJECT_FOLDERS:
        untrusted.make_folders(repo, objects / name, mode)


def make_worktree_config(repo: Path, name: str) -> None:
    """An empty ``config.worktree`` in the builder's worktree folder ``.git/worktrees/<name>``
    unless one is there: the builder's jail binds it read-only (a mount point it can
    neither write, remove nor rename over), so it holds no setting of the builder's for
    the owner's git in the worktree (read when ``extensions.worktreeConfig`` is on)."""
    relative = PurePosixPath(".git", "worktrees", name, WORKTREE_CONFIG)
    if not untrusted.exists(repo, relative):
        untrusted.write(repo, relative, b"", 0o644)


def redirected(repo: Path) -> str | None:
    """What of ``repo/.git``'s shared parts is not as git makes it (a link, a FIFO, a
    device, an objects folder that is no folder), as one line; None when all is."""
    budget = MAX_ENTRIES
    for part in SHARED:
        start = PurePosixPath(".git", part)
        if not untrusted.exists(repo, start):
            continue
        try:
            for where, kinds in untrusted_walk.walk(
                repo, start, max_entries=budget, max_depth=MAX_DEPTH
            ):
                budget -= len(kinds)
                found = _odd(where, kinds)
                if found is not None:
                    return found
        except untrusted_walk.Unreadable as exc:
            return f"{exc}: git, the owner's too, would fail there"
        except untrusted_walk.Unfinished:
            return (
                f"{start} holds more than {MAX_ENTRIES:,} entries to check; pack the "
                "repository's loose objects with `git gc` first"
            )
        except untrusted.FileRefused as exc:
            return f"{start}: {exc}"
    return None


def _odd(where: PurePosixPath, kinds: dict[str, str]) -> str | None:
    """The first entry of the folder ``where`` that git never makes there, described."""
    for name, kind in sorted(kinds.items()):
        if kind == "link":
            return f"{where / name} is a link: git, the owner's too, would follow it outside"
        if kind == "other":
            return f"{where / name} is a FIFO, socket or device, which git would open"
        if where.name == "objects" and kind != "dir" and (name in OBJECT_FOLDERS or name == "info"):
            return f"{where / name} is a file where git keeps a folder of objects"
    return None
