"""The git side of a builder: its branch and its worktree, by argv, never a shell.

A builder writes its repository's ``.git`` from its jail (its commits land
there), and a session writes its butler folder, which may be a repository:
git reads its config, hooks and attributes from there, and git can run
programs they name. So no git command the daemon runs lets the repository
choose what runs (docs/security.md, "The daemon's git"):

- its environment is built from nothing: no system or global config
  (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``, no ``HOME``),
  no system attributes, no replace refs, no terminal prompt, and none of the
  daemon's own ``GIT_*`` variables;
- :data:`OVERRIDES` go on its command line, which git applies after every
  config file (includes and ``includeIf`` included): hooks, fsmonitor and
  each program a setting names are off, and no transport may run (a lazy
  fetch of a partial clone would run ``uploadpack`` or ``sshCommand``);
- it never looks into a submodule: a builder can commit a repository of its
  own making as a gitlink, whose ``.git/config`` names a filter program, and
  ``git status`` (or ``git worktree remove`` without ``--force``, which runs
  it) would run that program. So :data:`OVERRIDES` ignore submodules, every
  ``status`` and ``diff`` gets ``--ignore-submodules=all``, and a worktree is
  removed only with ``--force``, after the daemon's own check;
- where this machine can start a jail, it runs inside one of its own that
  holds the repository and nothing else of the owner's (no token, no data
  folder, no network), so a program no setting can switch off by name (a
  filter driver of any name, set in a config the owner wrote) reaches
  nothing a builder could not; and there the repository's ``.git`` is
  read-only but for the few commands that must write it (:data:`WRITES`),
  so such a program cannot plant a hook or a setting for the owner's git;
- the repository's ``.git`` must be a real folder, and ``.git/info/exclude``
  and ``.builders/`` are written through :mod:`butler.security.untrusted`,
  so a link planted there is refused, never followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
from pathlib import Path

from butler.builders import git_folder
from butler.builders.plan import BUILDERS_DIR
from butler.errors import ButlerError, UserError
from butler.security import untrusted
from butler.spawner.sandboxing import git_jail

#: Command-line config: applied after every config file git reads, so none can undo it.
OVERRIDES = (
    "core.hooksPath=/dev/null",  # no hook: /dev/null is no folder
    "core.fsmonitor=false",
    "core.sshCommand=false",
    "core.gitProxy=",
    "core.askPass=",
    "core.editor=false",
    "sequence.editor=false",
    "core.pager=cat",
    "core.alternateRefsCommand=",
    "diff.external=",
    "credential.helper=",  # an empty value empties the list
    "gpg.program=false",
    "gpg.openpgp.program=false",
    "gpg.x509.program=false",
    "gpg.ssh.program=false",
    "gpg.ssh.defaultKeyCommand=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "uploadpack.packObjectsHook=",
    "protocol.allow=never",  # no transport at all, lazy fetches included
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",  # no status or diff looks into a submodule's repository
    "status.submoduleSummary=false",
)
#: Commands that write the repository's ``.git`` or ``.builders/``; every other command
#: runs with both read-only (where a jail can be started).
WRITES = (("worktree", "add"), ("worktree", "remove"), ("worktree", "prune"), ("branch", "-D"))
#: Commands that would look into a submodule unless told not to.
LOOKS_INTO_SUBMODULES = ("status", "diff")
#: The environment of every git command, whole: nothing of the daemon's.
ENVIRONMENT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "HOME": "/nonexistent",
    "XDG_CONFIG_HOME": "/nonexistent",
    "LC_ALL": "C",
}
#: Longest wait for one git command (a FIFO planted where git reads would hold it).
TIMEOUT_S = 300.0
#: Largest ``info/exclude`` the daemon reads before adding its line.
MAX_EXCLUDE_BYTES = 1024 * 1024


class GitError(ButlerError):
    """A git command failed; the message carries git's own words."""


async def git(repo: Path, *args: str, check: bool = True) -> tuple[int, str]:
    """Run ``git -C repo args...`` hardened (and jailed where it can be); return (status,
    stdout). GitError on failure when ``check``."""
    if args[0] in LOOKS_INTO_SUBMODULES:
        args = (args[0], "--ignore-submodules=all", *args[1:])
    argv = [shutil.which("git") or "git", *_config_args(), "-C", str(repo), *args]
    jail = await _jail(_root_of(repo), writes=tuple(args[:2]) in WRITES)
    env = {**ENVIRONMENT, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    proc = await asyncio.create_subprocess_exec(
        *jail,
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env=env,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise GitError(f"git {args[0]}: no answer within {TIMEOUT_S:g} s; stopped") from None
    if check and proc.returncode != 0:
        detail = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {args[0]}: {detail[-1] if detail else f'exit {proc.returncode}'}")
    return proc.returncode or 0, out.decode(errors="replace").strip()


def _config_args() -> list[str]:
    return [part for setting in OVERRIDES for part in ("-c", setting)]


def _root_of(path: Path) -> Path:
    """The repository a daemon's git command works in: a builder's worktree is in its
    ``.builders/`` folder."""
    return path.parent.parent if path.parent.name == BUILDERS_DIR else path


async def _jail(root: Path, writes: bool = False) -> list[str]:
    """The bubblewrap argv (ending in ``--``) of a git jail for ``root``, its ``.git`` and
    ``.builders/`` writable only when the command ``writes``; ``[]`` where this machine
    cannot start one (and so jails no runtime either)."""
    # Only real folders: a link would be mounted where it points.
    folders = (root / ".git", root / BUILDERS_DIR) if writes else ()
    return await git_jail(root, tuple(p for p in folders if _real_dir(p)))


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def top_of(path: Path) -> Path:
    """The nearest of ``path`` and its parents holding ``.git``, which must be a real
    folder: a linked ``.git`` would let the repository name any folder as its git
    folder (and the builder's jail bind it writable); a ``.git`` file is a linked worktree.
    A ``.git`` folder without ``HEAD`` is passed over, as git passes over it."""
    path = path.resolve()
    for folder in [path, *path.parents]:
        try:
            found = os.lstat(folder / ".git")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UserError(f"--repo {path}: cannot look for .git: {exc.strerror}") from None
        if stat.S_ISDIR(found.st_mode) and not os.path.lexists(folder / ".git" / "HEAD"):
            continue  # no repository (the empty one a jail holds in a butler folder): as git
        if not stat.S_ISDIR(found.st_mode):
            raise UserError(
                f"--repo {folder}: its .git is a link or a file, not a folder; expected the "
                "main checkout of a repository"
            )
        return folder
    raise UserError(f"--repo {path}: not a git repository; expected a folder inside one")


async def repo_root(path: Path) -> Path:
    """The top of the repository holding ``path``, which must have a first commit and
    nothing a builder redirected in its ``.git`` (:func:`git_folder.redirected`)."""
    top = top_of(path)
    damage = await asyncio.to_thread(git_folder.redirected, top)
    if damage is not None:
        raise UserError(
            f"--repo {top}: {damage}; refused until it is repaired (docs/builders.md, "
            '"A damaged repository")'
        )
    try:
        await git(top, "rev-parse", "--verify", "HEAD")
    except GitError as exc:
        raise UserError(
            f"--repo {top}: no commit to branch off ({exc}); builders branch off HEAD"
        ) from None
    status, _ = await git(top, "cat-file", "-e", "HEAD^{commit}", check=False)
    if status != 0:
        raise UserError(
            f"--repo {top}: HEAD names a commit the repository does not hold (its objects "
            "were removed or written elsewhere); refused until it is repaired "
            '(docs/builders.md, "A damaged repository")'
        )
    return top


async def builder_names(repo: Path) -> set[str]:
    """Names already used by builders of ``repo``: ``builder/*`` branches and worktree folders."""
    _, refs = await git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/builder/")
    names = {line.removeprefix("builder/") for line in refs.splitlines() if line}
    return names | worktree_folders(repo)


def worktree_folders(repo: Path) -> set[str]:
    return set(untrusted.names(repo, BUILDERS_DIR))


async def add_worktree(repo: Path, worktree: Path, branch: str) -> None:
    """A new branch off HEAD checked out at ``worktree``; ``.builders/`` kept out of git status."""
    await asyncio.to_thread(prepare, repo)
    await git(repo, "worktree", "add", "--quiet", "-b", branch, str(worktree), "HEAD")
    try:
        await asyncio.to_thread(git_folder.make_worktree_config, repo, worktree.name)
    except untrusted.FileRefused as exc:
        raise UserError(f"--repo {repo}: {exc}; a link there is never followed") from None


def prepare(repo: Path) -> None:
    """Make ``.builders/``, ``.git/hooks/`` (so a builder's jail binds the folder
    read-only rather than letting it make one) and every folder of ``.git/objects``
    (so the jail binds each, never ``objects/`` whole), and list ``/.builders/`` in the
    repository's own ``info/exclude``, which git never shares: all without following a
    link a builder planted (a linked ``info/exclude`` would have the daemon create or
    append any file)."""
    try:
        untrusted.make_folders(repo, BUILDERS_DIR)
        untrusted.make_folders(repo, ".git/hooks")
        git_folder.make_object_folders(repo)
        untrusted.add_line(repo, ".git/info/exclude", f"/{BUILDERS_DIR}/", MAX_EXCLUDE_BYTES)
    except untrusted.FileRefused as exc:
        raise UserError(f"--repo {repo}: {exc}; a link there is never followed") from None


async def worktrees(repo: Path) -> set[str]:
    """The paths of the repository's registered worktrees."""
    _, out = await git(repo, "worktree", "list", "--porcelain")
    return {
        line.removeprefix("worktree ") for line in out.splitlines() if line.startswith("worktree ")
    }


async def is_dirty(worktree: Path) -> bool:
    """Whether the worktree holds changes that are not committed."""
    _, out = await git(worktree, "status", "--porcelain")
    return bool(out)


async def remove_worktree(repo: Path, worktree: Path, force: bool = False) -> None:
    """Remove ``worktree``: always ``--force`` (without it git runs ``status`` into its
    submodules, see above), so the caller checks :func:`is_dirty` first; ``force``
    removes one holding submodules too."""
    await git(repo, "worktree", "remove", "--force", *(["--force"] if force else []), str(worktree))


async def branch_exists(repo: Path, branch: str) -> bool:
    status, _ = await git(
        repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False
    )
    return status == 0


async def is_merged(repo: Path, branch: str) -> bool:
    """Whether every commit of ``branch`` is already in the repository's checked-out HEAD."""
    status, _ = await git(repo, "merge-base", "--is-ancestor", branch, "HEAD", check=False)
    return status == 0


async def delete_branch(repo: Path, branch: str) -> None:
    await git(repo, "branch", "-D", branch)
