"""What a builder can leave in its repository's ``.git`` for the owner's own git, which
runs outside any jail and follows links: nothing but its commits on its own branch.

A builder's jail had ``objects/``, ``refs/`` and ``logs/`` writable whole: a
``logs/HEAD`` linked to ``/root/.bashrc`` had every later reflog line (the commit
subject in it) appended there by the owner's git; ``refs/heads/main`` could be moved
under the owner; a worktree path swapped for a link was bound where it pointed; and a
worktree pointer naming ``.git/worktrees/..`` had the whole ``.git`` bound writable.
Each is tried here with the genuine git in a real jail.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from butler.builders import git
from butler.builders.manager import plan_writable
from butler.builders.plan import BuilderPlan
from butler.sandbox.policy import JailPolicy, LinkedFolder, bwrap_argv
from tests.builders import conftest as builder_fixtures
from tests.helpers import require_jail
from tests.security.conftest import owners_git

pytestmark = pytest.mark.slow

repo = builder_fixtures.repo
COMMIT = "git -c user.name=b -c user.email=b@b commit -q"


def in_builder_jail(repo: Path, worktree: Path, script: str, branch: str = "") -> str:
    """What ``script`` printed in the jail of the builder whose worktree is ``worktree``."""
    require_jail()
    plan = BuilderPlan("task", worktree.name, branch or f"builder/{worktree.name}", repo, "")
    policy = JailPolicy(writable=plan_writable(plan), cwd=worktree)
    argv = [*bwrap_argv(policy), "--", "sh", "-c", script]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


def rev(repo: Path, name: str) -> str:
    return owners_git(repo, "rev-parse", name).stdout.strip()


async def test_a_builder_links_no_reflog_the_owners_git_appends_to(repo: Path, tmp_path: Path):
    startup = tmp_path / "owner-home" / ".bashrc"  # stands for /root/.bashrc
    startup.parent.mkdir()
    startup.write_text("export PS1='# '\n")
    marker = tmp_path / "ran"
    worktree = repo / ".builders" / "b1"
    await git.add_worktree(repo, worktree, "builder/b1")
    logs = [
        repo / ".git" / "logs" / "HEAD",
        repo / ".git" / "logs" / "refs" / "heads" / "builder" / "b1",
        repo / ".git" / "worktrees" / "b1" / "logs" / "HEAD",
    ]
    links = "".join(f"ln -sf {startup} {log} 2>/dev/null && echo LINKED {log}\n" for log in logs)
    said = in_builder_jail(
        repo,
        worktree,
        f"{links}echo x > new.txt && git add new.txt && "
        f"{COMMIT} -m 'a fix; id > {marker}' && echo COMMITTED",
    )
    assert "LINKED" not in said and "COMMITTED" in said, said
    owners_git(repo, "cherry-pick", "builder/b1")  # the owner takes the builder's work
    owners_git(worktree, "commit", "-q", "--amend", "--no-edit")  # or amends it there
    assert startup.read_text() == "export PS1='# '\n", startup.read_text()
    assert not any(log.is_symlink() for log in logs)


def test_a_worktree_that_is_a_link_is_refused_in_one_line(repo: Path, tmp_path: Path):
    owners = tmp_path / "owner-secrets"
    owners.mkdir()
    (owners / "token").write_text("owner-token\n")
    worktree = repo / ".builders" / "b2"
    worktree.parent.mkdir(exist_ok=True)
    worktree.symlink_to(owners)  # swapped in after the daemon's git made the real one
    with pytest.raises(LinkedFolder, match=r"b2: is a link, refused .* remove the link"):
        in_builder_jail(repo, worktree, f"cat {worktree}/token")


async def test_a_builder_commits_on_its_branch_but_cannot_move_the_owners(repo: Path):
    """The owner's next commit would sit on the builder's, and prune would take the
    builder's branch as merged."""
    before = rev(repo, "main")
    worktree = repo / ".builders" / "b3"
    await git.add_worktree(repo, worktree, "builder/b3")
    said = in_builder_jail(
        repo,
        worktree,
        "echo evil > Makefile && git add Makefile && "
        f"{COMMIT} -m innocent && echo COMMITTED\n"
        "git update-ref refs/heads/main HEAD 2>/dev/null && echo MOVED\n"
        "git branch -f main HEAD 2>/dev/null && echo MOVED\n"
        f"echo {'0' * 40} > {repo}/.git/packed-refs 2>/dev/null && echo MOVED\n",
    )
    assert "COMMITTED" in said and "MOVED" not in said, said
    assert rev(repo, "main") == before and rev(repo, "builder/b3") != before


async def test_a_spec_builder_commits_on_its_spec_named_branch(repo: Path):
    worktree = repo / ".builders" / "b4"
    await git.add_worktree(repo, worktree, "builder/0009-a-spec")
    said = in_builder_jail(
        repo, worktree, f"{COMMIT} --allow-empty -m spec && echo COMMITTED", "builder/0009-a-spec"
    )
    assert "COMMITTED" in said, said
    assert owners_git(repo, "log", "-1", "--format=%s", "builder/0009-a-spec").stdout == "spec\n"


async def test_a_worktree_pointer_naming_the_git_folder_itself_opens_nothing(repo: Path):
    """``gitdir: <repo>/.git/worktrees/..`` passed a textual check and had the builder's
    jail bind the whole ``.git`` writable (its config, its hooks)."""
    worktree = repo / ".builders" / "b5"
    await git.add_worktree(repo, worktree, "builder/b5")
    (worktree / ".git").write_text(f"gitdir: {repo}/.git/worktrees/..\n")
    config = repo / ".git" / "config"
    said = in_builder_jail(repo, worktree, f"(echo '[core]' >> {config}) 2>/dev/null && echo WROTE")
    assert "WROTE" not in said and "[core]\n" not in config.read_text().split("\n", 1)[1], said
