"""A builder's own worktree folder (``.git/worktrees/<id>/``) holds nothing the owner's git
obeys: in a repository with ``extensions.worktreeConfig`` (``git sparse-checkout`` turns
it on), git reads that folder's ``config.worktree`` for the worktree, and a builder
wrote ``core.fsmonitor`` there; the owner's ``git status`` in ``.builders/<id>``, taking
the builder's work, ran it outside any jail."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from butler.builders.git import add_worktree
from butler.sandbox.policy import JailPolicy
from tests.builders import conftest as builder_fixtures
from tests.builders.conftest import run
from tests.sandbox.git_attempts import attempts
from tests.security.conftest import owners_git

pytestmark = pytest.mark.slow  # real jails

repo = builder_fixtures.repo


def test_a_builder_leaves_no_worktree_config_for_the_owners_git(repo: Path, tmp_path: Path):
    run("git", "config", "extensions.worktreeConfig", "true", cwd=repo)
    worktree = repo / ".builders" / "b1"
    asyncio.run(add_worktree(repo, worktree, "builder/b1"))  # as the daemon adds one
    own = repo / ".git" / "worktrees" / "b1"
    stolen = tmp_path / "stolen"
    script = (
        f"git config --worktree core.fsmonitor 'touch {stolen}; false'; "
        f"printf '[core]\\n\\tfsmonitor = touch {stolen}; false\\n' >> {own}/config.worktree; "
        "git -c user.name=b -c user.email=b@b commit -q --allow-empty -m work && echo COMMITTED"
    )
    said = attempts(JailPolicy(writable=(worktree, repo / ".git"), cwd=worktree), script)
    assert "COMMITTED" in said, said  # the builder still works
    owners_git(worktree, "status")  # the owner, later, taking the builder's work
    assert not stolen.exists(), f"the owner's git ran the builder's fsmonitor: {said}"
