"""What a jail sees of a repository's git folders (its part of :mod:`.policy`).

A repository's git folder is where a jailed runtime could leave code for
someone outside to run: a hook, ``core.fsmonitor`` in its config, a
``commondir`` naming another git folder, a reflog linked to a file the
owner's git then appends to, an objects folder linked to one elsewhere, where
the owner's git would write its commits. So a writable ``.git`` is never
writable whole (:func:`git_binds`): a builder on ``builder/<id>`` gets the
folders its objects go into (never ``objects/`` itself), the folder of
builder branches, its own branch's reflog and its own worktree's folder, and
the rest (config, hooks, info/, HEAD and its log, other branches,
packed-refs, its worktree's pointers) stays read-only; a ``.git`` inside a
writable folder (a butler folder that is a repository) is read-only; a
linked ``.git`` is not bound at all.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from butler.security import untrusted

#: Where the daemon makes builders' worktrees, inside their repository: ``.builders/<id>``.
BUILDERS_DIR = ".builders"
#: What the look over a butler folder at a jail's end keeps: the folder's own repository
#: (held read-only in every jail) and builders' worktree pointers (the daemon's).
BUTLER_FOLDER_KEEPS = (".git", f"{BUILDERS_DIR}/*/.git")
#: What it keeps in a builder's worktree: the worktree's own pointer.
WORKTREE_KEEPS = (".git",)
#: Builders' branches are ``builder/<id>``: what a builder may write of ``refs/`` and ``logs/``.
BUILDER_REFS = "refs/heads/builder"
BUILDER_LOGS = "logs/refs/heads/builder"
#: A builder branch's name below ``builder/``: one plain component, no ``..``.
SAFE_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*")
#: The folders of ``objects/`` a builder's commits write, each bound writable on its own
#: (one per first byte of an object's name, and the packs): ``objects/`` itself stays
#: read-only, so none of them can be swapped for a link to a folder elsewhere, which the
#: owner's git would then write its objects into. (``info/alternates`` would name other
#: object stores: read-only too.)
OBJECT_FOLDERS = (*(f"{byte:02x}" for byte in range(256)), "pack")
#: What stays read-only in a builder's own worktree folder (``.git/worktrees/<name>``):
#: the pointers that say which git folder its worktree uses.
WORKTREE_POINTERS = ("commondir", "gitdir")
#: The worktree's own config, read by every git in the worktree when the repository has
#: ``extensions.worktreeConfig`` (``git sparse-checkout`` turns it on): made empty by
#: the daemon and held read-only, or a builder's ``core.fsmonitor`` there ran in the
#: owner's ``git status`` of its worktree.
WORKTREE_CONFIG = "config.worktree"


def real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def git_binds(writable: list[Path]) -> list[str]:
    """What a jail sees of the git folders among (and inside) ``writable`` folders.

    A writable ``.git`` (a builder's repository): read-only, but for the folders of
    ``objects/`` (:data:`OBJECT_FOLDERS`, the daemon makes them first: each is a
    mount point the jail can neither remove nor replace) and, for each writable
    worktree ``.builders/<id>`` of that repository, what its commits on
    ``builder/<id>`` write: the folder of
    builder branches, that branch's reflog (the file: a link cannot replace a
    mount point) and ``worktrees/<id>/`` (whose :data:`WORKTREE_POINTERS` and
    :data:`WORKTREE_CONFIG` are read-only, and the worktree's ``.git`` file and its
    ``logs/HEAD`` file are bound on their own).
    A real ``.git`` inside another writable folder: read-only. Links are never bound.
    """
    args: list[str] = []
    git_dirs = [p for p in writable if p.name == ".git" and real_dir(p)]
    for git_dir in git_dirs:
        args += ["--ro-bind", str(git_dir), str(git_dir)]
        args += _writable_dir(*(git_dir / "objects" / name for name in OBJECT_FOLDERS))
    for folder in writable:
        if folder.name == ".git":
            continue
        if real_dir(folder / ".git"):
            if folder / ".git" not in git_dirs:  # else a builder's, bound as above
                args += ["--ro-bind", str(folder / ".git"), str(folder / ".git")]
            continue
        own = worktree_folder(folder, git_dirs)
        if own is None:
            continue
        git_dir = own.parent.parent
        args += _writable_dir(git_dir / BUILDER_REFS, own)
        branch = own_branch(own)
        logs = () if branch is None else (git_dir / BUILDER_LOGS / branch,)
        args += _writable_file(*logs, own / "logs" / "HEAD")
        for name in WORKTREE_POINTERS:
            args += ["--ro-bind-try", str(own / name), str(own / name)]
        args += _held_file(own / WORKTREE_CONFIG)
        args += ["--ro-bind", str(folder / ".git"), str(folder / ".git")]
    return args


def _writable_dir(*paths: Path) -> list[str]:
    return [a for p in paths if real_dir(p) for a in ("--bind", str(p), str(p))]


def _held_file(path: Path) -> list[str]:
    """``path`` read-only when it is a regular file (the daemon makes it empty when it adds
    the worktree: ``builders/git_folder.make_worktree_config``). A link is not bound: it
    is found before the spawn (``builders/git_folder.redirected``)."""
    try:
        regular = stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return []
    return ["--ro-bind", str(path), str(path)] if regular else []


def _writable_file(*paths: Path) -> list[str]:
    """Regular files only: a link is never bound (it would be followed)."""
    args: list[str] = []
    for path in paths:
        try:
            regular = stat.S_ISREG(os.lstat(path).st_mode)
        except OSError:
            continue
        if regular:
            args += ["--bind", str(path), str(path)]
    return args


def own_branch(own: Path) -> str | None:
    """The name of the ``builder/<name>`` branch a builder's worktree folder has checked
    out (``builder/<id>``, or a spec's name), when its ``HEAD`` names one plainly."""
    try:
        head = untrusted.read(own, "HEAD", 4096).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    name = head.removeprefix(f"ref: {BUILDER_REFS}/")
    if name == head or not SAFE_BRANCH.fullmatch(name) or name.endswith(".lock"):
        return None
    return name


def worktree_folder(worktree: Path, git_dirs: list[Path]) -> Path | None:
    """``.git/worktrees/<id>`` of the builder whose worktree is ``<repo>/.builders/<id>``:
    the folder the daemon's ``git worktree add`` made, named by the builder's id (never
    by what the worktree's ``.git`` file says), when it is a real folder and that file
    names that very folder (real paths compared: ``worktrees/..`` is ``.git`` itself);
    else None. A ``.git`` file in a home or workspace names no folder at all."""
    if worktree.parent.name != BUILDERS_DIR:
        return None
    git_dir = worktree.parent.parent / ".git"
    own = git_dir / "worktrees" / worktree.name
    if git_dir not in git_dirs or not (real_dir(own.parent) and real_dir(own)):
        return None
    try:
        pointer = untrusted.read(worktree, ".git", 4096).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError, untrusted.FileRefused):
        return None
    named = pointer.removeprefix("gitdir:").strip()
    if not named.startswith("/") or os.path.realpath(named) != os.path.realpath(own):
        return None
    return own
