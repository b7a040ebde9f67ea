"""A session's ``builder_spawn`` reaches only the repositories the owner listed in
``[butler.builders] repos``; the owner's own calls keep any repository (docs/security.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from butler.config.builders import BuildersConfig
from tests.builders import conftest as builder_fixtures
from tests.builders.conftest import run
from tests.helpers import butler_client
from tests.security.conftest import agent_runtime

pytestmark = pytest.mark.slow  # a real server, and runtimes as processes

repo = builder_fixtures.repo


def builder_branches(repo: Path) -> list[str]:
    refs = run("git", "for-each-ref", "--format=%(refname:short)", "refs/heads/builder/", cwd=repo)
    return refs.split()


async def session_calls(butler, steps: list[dict]) -> list[dict]:
    """Trigger a session whose runtime makes ``steps``; what each step got."""
    async with butler_client(f"{butler.url}/mcp", timeout=120) as owner:
        answer = await owner.call_tool("trigger", {"prompt": json.dumps(steps), "timeout_s": 60})
    result = answer.structured_content
    assert result["success"], result
    return json.loads(result["output"])


async def test_a_session_cannot_start_a_builder_in_a_repository_not_listed(serve, repo: Path):
    """Before, any repository the daemon's user could read: the builder then had its
    ``.git`` writable, and the daemon ran what it planted there."""
    spawn = {"tool": "builder_spawn", "args": {"repo": str(repo), "task": "[]", "headless": True}}
    async with serve() as butler:
        (seen,) = await session_calls(butler, [spawn])
    assert seen["ok"] is False
    assert "\n" not in seen["text"] and "[butler.builders] repos" in seen["text"], seen
    assert builder_branches(repo) == [] and not (repo / ".builders").exists()


async def test_a_listed_repository_is_allowed_and_a_link_to_it_resolved_once(
    serve, repo: Path, tmp_path: Path
):
    """The path is resolved when checked and that answer is what is used, so a link the
    session flips afterwards cannot move the builder to another repository."""
    link = tmp_path / "link"
    os.symlink(repo, link)
    spawn = {"tool": "builder_spawn", "args": {"repo": str(link), "task": "[]", "headless": True}}
    runtime = agent_runtime(max_concurrent_sessions=2)
    async with serve(runtime=runtime, extra=f'\n[butler.builders]\nrepos = ["{repo}"]\n') as b:
        (seen,) = await session_calls(b, [spawn])
    assert "[butler.builders] repos" not in seen["text"], seen
    (branch,) = builder_branches(repo)
    assert branch.startswith("builder/")


async def test_the_owner_keeps_any_repository(serve, repo: Path):
    async with serve() as butler, butler_client(f"{butler.url}/mcp", timeout=120) as owner:
        answer = await owner.call_tool(
            "builder_spawn",
            {"repo": str(repo), "task": "[]", "headless": True},
            raise_on_error=False,
        )
    text = answer.content[0].text if answer.content else ""
    assert "[butler.builders] repos" not in text
    assert len(builder_branches(repo)) == 1


def test_repos_must_be_absolute():
    with pytest.raises(ValueError, match="expected an absolute path"):
        BuildersConfig(repos=["relative/repo"])
    assert BuildersConfig(repos=["/srv/repo"]).repos == ["/srv/repo"]
