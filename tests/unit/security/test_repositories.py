"""Disarming the repositories a runtime left (butler/security/repositories.py): what git
would obey stops being a repository, nothing is deleted, and what the owner keeps stays."""

from __future__ import annotations

from pathlib import Path

from butler.sandbox.git_view import BUTLER_FOLDER_KEEPS
from butler.sandbox.policy import JailPolicy
from butler.security import repositories
from butler.security.repositories import disarm


def git_folder(path: Path, *, bare_marks: tuple[str, ...] = ("objects", "refs")) -> Path:
    """A folder laid out as git lays out a git folder (no git needed to tell)."""
    path.mkdir(parents=True)
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    (path / "config").write_text("[core]\n\tfsmonitor = touch /tmp/owned\n")
    for mark in bare_marks:
        (path / mark).mkdir()
    return path


def test_every_kind_of_repository_at_any_depth_is_disarmed_and_kept(tmp_path: Path):
    folder = tmp_path / "butler"
    git_folder(folder / "reports" / ".git")
    git_folder(folder / "a" / "b" / "c" / "d" / ".git")
    git_folder(folder / "archive")  # bare
    worktree_dir = folder / "x" / ".git"
    git_folder(worktree_dir, bare_marks=())
    (worktree_dir / "commondir").write_text("../../archive\n")  # a linked worktree's folder
    (folder / "notes").mkdir()
    (folder / "notes" / ".git").write_text("gitdir: /elsewhere\n")
    (folder / "linked").mkdir()
    (folder / "linked" / ".git").symlink_to(folder / "archive")
    look = disarm(folder)
    found = {str(d.path.relative_to(folder)): d.now for d in look.disarmed}
    assert found == {
        "reports/.git/HEAD": "HEAD.disarmed",
        "a/b/c/d/.git/HEAD": "HEAD.disarmed",
        "archive/HEAD": "HEAD.disarmed",
        "x/.git/HEAD": "HEAD.disarmed",
        "notes/.git": ".git.disarmed",
        "linked/.git": ".git.disarmed",
    }
    assert (folder / "reports" / ".git" / "config").read_text().startswith("[core]")
    assert (folder / "linked" / ".git.disarmed").is_symlink()  # renamed, never followed
    assert disarm(folder).disarmed == []  # disarmed once: nothing more to do


def test_what_the_owner_keeps_is_left_alone(tmp_path: Path):
    folder = tmp_path / "butler"
    git_folder(folder / ".git")  # the butler folder's own repository (held read-only)
    (folder / ".builders" / "b1").mkdir(parents=True)
    (folder / ".builders" / "b1" / ".git").write_text("gitdir: /repo/.git/worktrees/b1\n")
    git_folder(folder / ".builders" / "b1" / "sub" / ".git")  # one the builder made
    (folder / ".builders" / "b2").mkdir()
    (folder / ".builders" / "b2" / ".git").symlink_to(folder / ".git")  # swapped in: not kept
    look = disarm(folder, BUTLER_FOLDER_KEEPS)
    assert sorted(str(d.path.relative_to(folder)) for d in look.disarmed) == [
        ".builders/b1/sub/.git/HEAD",
        ".builders/b2/.git",
    ]
    assert (folder / ".git" / "HEAD").is_file()
    assert (folder / ".builders" / "b1" / ".git").is_file()


def test_a_read_only_folder_a_name_taken_and_a_bound_are_each_handled(tmp_path: Path, monkeypatch):
    folder = tmp_path / "butler"
    repo = git_folder(folder / "locked" / ".git")
    (repo / "HEAD.disarmed").write_text("planted first\n")
    repo.chmod(0o500)  # a root daemon writes anyway; an owner's daemon makes it writable
    look = disarm(folder)
    assert [d.now for d in look.disarmed] == ["HEAD.disarmed-2"]
    assert (repo / "HEAD.disarmed").read_text() == "planted first\n"
    monkeypatch.setattr(repositories, "MAX_ENTRIES", 3)
    for index in range(10):
        (folder / f"file{index}").write_text("")
    bounded = disarm(folder)
    assert bounded.unfinished and "more entries" in bounded.unfinished
    assert bounded.noteworthy and "not looked at whole" in bounded.lines()[-1]


def test_the_folder_itself_laid_out_as_a_bare_repository_is_disarmed(tmp_path: Path):
    """git in the butler folder takes it for a bare repository (the empty ``.git`` a jail
    holds there is no repository), whose ``config`` the session wrote."""
    folder = git_folder(tmp_path / "butler")
    (folder / ".git").mkdir()
    hidden = git_folder(folder / "x" / ".git" / "objects" / "ab")  # hidden in a git folder
    assert {str(d.path) for d in disarm(folder, BUTLER_FOLDER_KEEPS).disarmed} == {
        str(folder / "HEAD"),
        str(hidden / "HEAD"),
    }


def test_names_taken_in_advance_do_not_keep_a_repository_armed(tmp_path: Path):
    repo = git_folder(tmp_path / "butler" / "r" / ".git")
    for name in ["HEAD.disarmed", *(f"HEAD.disarmed-{n}" for n in range(2, 100))]:
        (repo / name).mkdir()
    (found,) = disarm(tmp_path / "butler").disarmed
    assert found.now.startswith("HEAD.disarmed-") and not (repo / "HEAD").exists()


def test_a_missing_folder_is_nothing_to_disarm(tmp_path: Path):
    assert not disarm(tmp_path / "gone").noteworthy


def test_a_jail_guards_its_butler_folder_and_a_builders_worktree_only(tmp_path: Path):
    folder, work, home = tmp_path / "butler", tmp_path / "work", tmp_path / "home"
    worktree = tmp_path / "repo" / ".builders" / "b1"
    policy = JailPolicy(
        writable=(work, folder, worktree, tmp_path / "repo" / ".git"),
        held=(folder / ".git", folder / ".builders"),
        home=home,
    )
    assert policy.guarded() == [(folder, BUTLER_FOLDER_KEEPS), (worktree, (".git",))]
    assert JailPolicy(writable=(work,)).guarded() == []  # an ask/chat agent's jail
