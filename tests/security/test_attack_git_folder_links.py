"""ATTACK: links a builder leaves in the parts of ``.git`` its jail may write.

``objects/``, ``refs/`` and ``logs/`` are writable in a builder's jail (its commits land
there). A link there is followed by the owner's own git, outside any jail: a
``logs/HEAD`` linked to a file of the owner's has every later reflog line appended to
that file as the owner, with the commit subject in it; when the owner cherry-picks,
rebases or merges the builder's work, that subject is the builder's, so a shell start-up
file (``/root/.bashrc``) ends up running the builder's command.

Also: a worktree path that is a link is bound where it points (bubblewrap follows the
source), so whoever can swap ``.builders/<id>`` for a link before the builder's jail
starts (a session whose butler folder is the repository) hands the builder that folder.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from butler.builders import git
from butler.builders.manager import plan_writable
from butler.builders.plan import BuilderPlan
from butler.sandbox.policy import JailPolicy, bwrap_argv
from tests.builders import conftest as builder_fixtures
from tests.helpers import require_jail

pytestmark = pytest.mark.slow

repo = builder_fixtures.repo
OWNER = ["git", "-c", "user.name=owner", "-c", "user.email=o@o"]


def in_builder_jail(repo: Path, worktree: Path, script: str) -> subprocess.CompletedProcess:
    plan = BuilderPlan("task", worktree.name, f"builder/{worktree.name}", repo, "")
    policy = JailPolicy(writable=plan_writable(plan), cwd=worktree)
    return subprocess.run(
        [*bwrap_argv(policy), "--", "sh", "-c", script], capture_output=True, text=True
    )


async def test_a_linked_reflog_makes_the_owners_git_write_a_builders_command(
    repo: Path, tmp_path: Path
):
    require_jail()
    startup = tmp_path / "owner-home" / ".bashrc"  # stands for /root/.bashrc
    startup.parent.mkdir()
    startup.write_text("export PS1='# '\n")
    marker = tmp_path / "ran"
    worktree = repo / ".builders" / "b1"
    await git.add_worktree(repo, worktree, "builder/b1")
    done = in_builder_jail(
        repo,
        worktree,
        (
            f"ln -sf {startup} {repo}/.git/logs/HEAD && echo x > new.txt && git add new.txt && "
            f"git -c user.name=b -c user.email=b@b commit -qm 'a fix; id > {marker}' && echo ok"
        ),
    )
    assert done.stdout.strip() == "ok", done.stderr
    # The owner takes the builder's work, as owners do.
    subprocess.run([*OWNER, "cherry-pick", "builder/b1"], cwd=repo, capture_output=True)
    assert startup.read_text() == "export PS1='# '\n", startup.read_text()
    subprocess.run(["bash", str(startup)], capture_output=True)  # the owner's next login
    assert not marker.exists(), f"the builder's command ran as {marker.read_text()}"


def test_a_linked_worktree_is_bound_where_it_points(repo: Path, tmp_path: Path):
    require_jail()
    owners = tmp_path / "owner-secrets"
    owners.mkdir()
    (owners / "token").write_text("owner-token\n")
    worktree = repo / ".builders" / "b2"
    worktree.parent.mkdir(exist_ok=True)
    worktree.symlink_to(owners)  # swapped in after the daemon's git made the real one
    done = in_builder_jail(repo, worktree, f"cat {worktree}/token 2>&1")
    assert "owner-token" not in done.stdout, "the builder's jail bound the link's target"


async def test_a_builder_moves_the_owners_checked_out_branch(repo: Path):
    """``refs/`` is writable whole, so ``refs/heads/main`` (the owner's HEAD) is too: the
    owner's next commit sits on the builder's, every next builder's worktree is checked
    out from it, and prune takes the builder's branch as merged."""
    require_jail()
    before = subprocess.run(
        ["git", "rev-parse", "main"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    worktree = repo / ".builders" / "b3"
    await git.add_worktree(repo, worktree, "builder/b3")
    done = in_builder_jail(
        repo,
        worktree,
        (
            "echo evil > Makefile && git add Makefile && "
            "git -c user.name=b -c user.email=b@b commit -qm 'innocent' && "
            "git update-ref refs/heads/main HEAD && echo moved"
        ),
    )
    assert "moved" in done.stdout, done.stderr
    after = subprocess.run(
        ["git", "rev-parse", "main"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    assert after == before, "the builder moved the owner's branch"
