"""``butler builders prune``: remove what finished builders leave behind.

For each builder whose runtime has ended: its tmux session, its worktree
(kept when it holds uncommitted changes, unless forced), its branch (deleted
when merged into the repository's HEAD, or when forced) and its private
folder. The row stays, marked ``pruned_at`` once nothing is left, with what
was done in ``prune``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from butler.builders import git
from butler.builders.manager import BuilderManager
from butler.builders.records import builder_view, is_live, mark, now_iso


async def prune(manager: BuilderManager, force: bool = False) -> list[dict[str, Any]]:
    """Prune every finished builder not yet pruned; return one report per builder."""
    await manager.refresh()
    reports: list[dict[str, Any]] = []
    for row in await manager.rows():
        meta = row["metadata"]
        if meta.get("pruned_at") or is_live(row) or row["status"] in ("pending", "running"):
            continue
        report = await prune_one(manager, row, force)
        done = all(not value.startswith(("kept", "error")) for value in report.values())
        marks: dict[str, Any] = {"prune": report}
        if done:
            marks["pruned_at"] = now_iso()
        await mark(manager.sessions, row, marks)
        reports.append({**builder_view(row), "prune": report, "pruned": done})
    return reports


async def prune_one(manager: BuilderManager, row: dict[str, Any], force: bool) -> dict[str, str]:
    """Remove one builder's tmux session, worktree, branch and folder, as far as allowed."""
    meta = row["metadata"]
    report: dict[str, str] = {}
    if meta.get("tmux_session"):
        killed = await manager.tmux.kill(meta["tmux_session"])
        report["tmux"] = "killed" if killed else "gone"
    repo, worktree = Path(meta["repo"]), Path(meta["worktree"])
    if not _exists(repo):
        report["worktree"] = report["branch"] = "gone with the repository"
    else:
        try:
            report["worktree"] = await _worktree(repo, worktree, force)
            report["branch"] = await _branch(repo, meta["branch"], force, report["worktree"])
        except git.GitError as exc:
            report.setdefault("worktree", f"error: {exc}")
            report.setdefault("branch", f"error: {exc}")
    shutil.rmtree(manager.folder(meta["builder_id"]), ignore_errors=True)
    return report


def _exists(folder: Path) -> bool:
    return folder.is_dir()


async def _worktree(repo: Path, worktree: Path, force: bool) -> str:
    await git.git(repo, "worktree", "prune")  # forget worktrees deleted by hand
    if str(worktree) not in await git.worktrees(repo):
        return "gone"
    if not force and await git.is_dirty(worktree):
        return "kept: uncommitted changes (commit them, or prune --force)"
    await git.remove_worktree(repo, worktree, force=force)
    return "removed"


async def _branch(repo: Path, branch: str, force: bool, worktree: str) -> str:
    if not await git.branch_exists(repo, branch):
        return "gone"
    if worktree.startswith("kept"):
        return "kept: its worktree was kept"
    if not force and not await git.is_merged(repo, branch):
        return "kept: not merged into HEAD (merge it, or prune --force)"
    await git.delete_branch(repo, branch)
    return "deleted"
