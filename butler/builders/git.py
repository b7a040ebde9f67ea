"""The git side of a builder: its branch and its worktree, by argv, never a shell."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from butler.builders.plan import BUILDERS_DIR
from butler.errors import ButlerError, UserError


class GitError(ButlerError):
    """A git command failed; the message carries git's own words."""


async def git(repo: Path, *args: str, check: bool = True) -> tuple[int, str]:
    """Run ``git -C repo args...``; return (status, stdout). GitError on failure when ``check``."""
    proc = await asyncio.create_subprocess_exec(
        "git",
        "-C",
        str(repo),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
    )
    out, err = await proc.communicate()
    if check and proc.returncode != 0:
        detail = err.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {args[0]}: {detail[-1] if detail else f'exit {proc.returncode}'}")
    return proc.returncode or 0, out.decode(errors="replace").strip()


async def repo_root(path: Path) -> Path:
    """The top of the repository holding ``path``, which must have a first commit."""
    status, top = await git(path, "rev-parse", "--show-toplevel", check=False)
    if status != 0:
        raise UserError(f"--repo {path}: not a git repository; expected a folder inside one")
    status, _ = await git(path, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    if status != 0:
        raise UserError(f"--repo {top}: the repository has no commit yet; builders branch off HEAD")
    return Path(top)  # git gives the real, absolute path


async def builder_names(repo: Path) -> set[str]:
    """Names already used by builders of ``repo``: ``builder/*`` branches and worktree folders."""
    _, refs = await git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/builder/")
    names = {line.removeprefix("builder/") for line in refs.splitlines() if line}
    return names | worktree_folders(repo)


def worktree_folders(repo: Path) -> set[str]:
    folder = repo / BUILDERS_DIR
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


async def add_worktree(repo: Path, worktree: Path, branch: str) -> None:
    """A new branch off HEAD checked out at ``worktree``; ``.builders/`` kept out of git status."""
    _, exclude = await git(repo, "rev-parse", "--git-path", "info/exclude")
    exclude_builders(repo / exclude)  # a relative answer is relative to the repository
    await git(repo, "worktree", "add", "--quiet", "-b", branch, str(worktree), "HEAD")


def exclude_builders(exclude: Path) -> None:
    """List ``/.builders/`` in the repository's own ``info/exclude``, which git never shares."""
    exclude.parent.mkdir(parents=True, exist_ok=True)
    lines = exclude.read_text(encoding="utf-8").splitlines() if exclude.is_file() else []
    if f"/{BUILDERS_DIR}/" not in lines:
        exclude.write_text("\n".join([*lines, f"/{BUILDERS_DIR}/"]) + "\n", encoding="utf-8")


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
    args = ["worktree", "remove", *(["--force"] if force else []), str(worktree)]
    await git(repo, *args)


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
