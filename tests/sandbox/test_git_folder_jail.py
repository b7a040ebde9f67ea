"""What a jail sees of a repository's ``.git`` (butler/sandbox/policy.py): a builder commits,
but can leave nothing that chooses what git runs for the daemon or the owner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from butler.builders.git import prepare
from butler.sandbox.policy import JailPolicy
from tests.builders import conftest as builder_fixtures
from tests.builders.conftest import run
from tests.sandbox.git_attempts import attempts

pytestmark = pytest.mark.slow  # real jails

repo = builder_fixtures.repo


def tries(*paths: Path) -> str:
    """Shell lines that try to write each path, printing ``WROTE <path>`` when they can."""
    return "".join(f"(echo x >> '{p}') 2>/dev/null && echo 'WROTE {p}'\n" for p in paths)


def test_a_builder_commits_but_writes_nothing_that_chooses_code(repo: Path):
    worktree = repo / ".builders" / "b1"
    prepare(repo)  # as the daemon does before each builder
    run("git", "worktree", "add", "-q", "-b", "builder/b1", str(worktree), "HEAD", cwd=repo)
    git_dir, own = repo / ".git", repo / ".git" / "worktrees" / "b1"
    policy = JailPolicy(writable=(worktree, git_dir), cwd=worktree)
    commit = (
        "git -c user.name=b -c user.email=b@b commit -q --allow-empty -m work && echo COMMITTED"
    )
    guarded = [
        git_dir / "config",
        git_dir / "hooks" / "post-checkout",
        git_dir / "info" / "exclude",
        git_dir / "HEAD",
        git_dir / "commondir",
        git_dir / "config.worktree",
        own / "commondir",
        own / "gitdir",
        worktree / ".git",
    ]
    said = attempts(policy, f"echo edit >> README.md && echo EDITED\n{commit}\n{tries(*guarded)}")
    assert "EDITED" in said and "COMMITTED" in said, said
    assert "WROTE" not in said, said
    assert run("git", "log", "-1", "--format=%s", "builder/b1", cwd=repo).strip() == "work"
    assert not (git_dir / "commondir").exists() and not (git_dir / "config.worktree").exists()


def test_a_butler_folder_that_is_a_repository_keeps_its_git_read_only(tmp_path: Path):
    folder = tmp_path / "butler"
    folder.mkdir()
    run("git", "init", "-q", cwd=folder)
    said = attempts(
        JailPolicy(writable=(folder,)),
        tries(folder / "notes.md", folder / ".git" / "config", folder / ".git" / "hooks" / "x"),
    )
    assert said.split() == ["WROTE", str(folder / "notes.md")], said


def test_a_linked_git_folder_is_not_bound(repo: Path, tmp_path: Path):
    """``.git`` linked to another repository's would otherwise be bound writable there."""
    victim = tmp_path / "victim"
    run("git", "init", "-q", str(victim), cwd=tmp_path)
    shutil.rmtree(repo / ".git")
    (repo / ".git").symlink_to(victim / ".git")
    said = attempts(JailPolicy(writable=(repo / ".git",)), tries(repo / ".git" / "config"))
    assert "WROTE" not in said, said


def test_a_git_file_in_a_home_opens_no_other_worktree(repo: Path, tmp_path: Path):
    """Only the builder's own worktree folder is writable: a ``.git`` file its runtime
    left in its home, naming another builder's, is no way in."""
    for name in ("b1", "b2"):
        worktree = repo / ".builders" / name
        run("git", "worktree", "add", "-q", "-b", f"builder/{name}", str(worktree), cwd=repo)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'b2'}\n")
    policy = JailPolicy(writable=(repo / ".builders" / "b1", repo / ".git", home))
    folders = repo / ".git" / "worktrees"
    said = attempts(policy, tries(folders / "b1" / "ORIG_HEAD", folders / "b2" / "ORIG_HEAD"))
    assert said.split() == ["WROTE", str(folders / "b1" / "ORIG_HEAD")], said


def test_a_builder_of_the_butler_folders_own_repository_still_commits(tmp_path: Path):
    """The butler folder (writable for its sessions, its .git read-only) is the builder's
    repository: the builder's view of that .git wins, so it commits."""
    folder = tmp_path / "butler"
    folder.mkdir()
    (folder / "CLAUDE.md").write_text("You are a butler.\n")
    run("git", "init", "-q", cwd=folder)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "add", ".", cwd=folder)
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", cwd=folder)
    worktree = folder / ".builders" / "b1"
    prepare(folder)
    run("git", "worktree", "add", "-q", "-b", "builder/b1", str(worktree), cwd=folder)
    held = (folder / ".git", folder / ".builders")  # as a session's jail holds them
    policy = JailPolicy(writable=(folder, worktree, folder / ".git"), cwd=worktree, held=held)
    commit = (
        "git -c user.name=b -c user.email=b@b commit -q --allow-empty -m work && echo COMMITTED"
    )
    others = tries(folder / ".git" / "config", folder / ".builders" / "b2")
    said = attempts(policy, f"{commit}\n{others}")
    assert "COMMITTED" in said and "WROTE" not in said, said


def test_a_butler_folder_without_git_gets_none_made_in_its_jail(tmp_path: Path):
    """A ``.git`` a session made would be obeyed by the owner's own git (its fsmonitor,
    its hooks): the jail holds an empty read-only folder there, which git passes over."""
    folder = tmp_path / "butler"
    folder.mkdir()
    marker = tmp_path / "fsmonitor-ran"
    held = (folder / ".git", folder / ".builders")
    said = attempts(
        JailPolicy(writable=(folder,), cwd=folder, held=held),
        f"git init -q . 2>/dev/null && git config core.fsmonitor 'touch {marker}' && echo MADE\n"
        f"mkdir .builders/x 2>/dev/null && echo MADE\n{tries(folder / 'notes.md')}",
    )
    assert "MADE" not in said and f"WROTE {folder / 'notes.md'}" in said, said
    run("git", "init", "-q", cwd=tmp_path)  # the owner's repository, above the butler folder
    run("git", "status", "--short", cwd=folder)
    assert not marker.exists() and not any((folder / ".git").iterdir())
