"""A jailed runtime never gets the daemon to act for it (docs/security.md, "The daemon's
hands"): the escapes measured from inside a session, each replayed with a real daemon,
a real jail and the genuine mechanism (a symlink, git)."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from subprocess import DEVNULL
from typing import Any

import pytest

from tests.builders import conftest as builder_fixtures
from tests.conftest import TEST_DSN
from tests.helpers import TEST_TOKEN, DaemonProcess, butler_client, free_port, write_butler
from tests.sandbox.conftest import PROBE, Jailed

pytestmark = pytest.mark.slow  # a real daemon, real jails

repo = builder_fixtures.repo
BUTLER = "deputy"


@pytest.fixture
def deputy(tmp_path: Path, schema_name: str) -> Iterator[Jailed]:
    """A jailed butler whose runtime is the probe, told its system prompt's file too."""
    roster = tmp_path / "roster"
    (roster / "shared").mkdir(parents=True)
    probe = ["/usr/bin/python3", "-I", "{cwd}/probe.py", "{prompt_file}", "{mcp_config}"]
    runtime = {"type": "command", "command": [*probe, "{system_prompt_file}"]}
    port = free_port()
    folder = write_butler(roster, BUTLER, port=port, schema=schema_name, runtime=runtime)
    shutil.copy(PROBE, folder / "probe.py")
    data = tmp_path / "data"
    env = {"BUTLER_DATA_DIR": str(data), "BUTLER_SANDBOX": "bwrap"}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        yield Jailed(daemon, folder, data, schema_name)


def report(result: dict[str, Any]) -> dict[str, Any]:
    return json.loads(result["output"])


@pytest.mark.parametrize("target", ["owner token", "/proc/self/environ"])
async def test_claude_md_linked_to_a_secret_never_reaches_the_next_session(
    deputy: Jailed, target: str
):
    """The butler folder is the session's to write; the daemon reads CLAUDE.md outside the
    jail. Before, the link was followed and the next session got the token (or the
    daemon's whole environment) as its system prompt."""
    token = TEST_TOKEN  # the daemon's, in its environment (BUTLER_TOKEN) and its data folder
    token_file = deputy.data / "butlers" / BUTLER / "token"
    token_file.write_text(token)
    where = str(token_file) if target == "owner token" else target
    prompt = deputy.folder / "CLAUDE.md"
    planted = await deputy.run({"symlink": [[where, str(prompt)]]})
    assert report(planted)["linked"] == {str(prompt): "linked"}  # the session could
    assert prompt.is_symlink()
    following = await deputy.run({})
    assert following["success"] is False
    assert "CLAUDE.md" in following["error"] and "refused" in following["error"]
    row = await deputy.row(following["session_id"])
    for text in (json.dumps(following), json.dumps(row, default=str)):
        assert token not in text and "DATABASE_URL" not in text


async def test_a_linked_role_or_include_never_reaches_a_builder(deputy: Jailed, repo: Path):
    """A session links the builder role and an include to the owner token; the next
    builder's prompt and system prompt hold neither the token nor the daemon's env."""
    token_file = deputy.data / "butlers" / BUTLER / "token"
    token_file.write_text(TEST_TOKEN)
    role, include = deputy.folder / "roles" / "builder.md", deputy.folder / "inc.md"
    role.parent.mkdir()
    prompt = deputy.folder / "CLAUDE.md"
    prompt.write_text(f"You are {BUTLER}.\n<!-- @include {BUTLER}/inc.md -->\n")
    include.write_text("Included.\n")
    planted = report(await deputy.run({"symlink": [[str(token_file), str(role)]]}))
    assert planted["linked"] == {str(role): "linked"}
    builder = await spawn(deputy, repo, {})
    assert builder["result"]["success"], builder  # no role rather than the token as one
    assert TEST_TOKEN not in json.dumps(builder)
    planted = report(await deputy.run({"symlink": [["/proc/self/environ", str(include)]]}))
    assert planted["linked"] == {str(include): "linked"}
    builder = await spawn(deputy, repo, {})
    text = json.dumps(builder)
    assert TEST_TOKEN not in text and "DATABASE_URL" not in text
    assert "inc.md" in builder["result"]["error"]  # the include refused, in one line


def marker_script(markers: Path, name: str) -> str:
    return f"#!/bin/sh\ntouch {markers / name}\n"


async def spawn(deputy: Jailed, repo: Path, plan: dict[str, Any]) -> dict[str, Any]:
    """The owner's ``builder_spawn``, headless: the builder's runtime is the probe."""
    args = {"repo": str(repo), "task": json.dumps(plan), "headless": True}
    async with butler_client(f"{deputy.url}/mcp", timeout=120) as owner:
        answer = await owner.call_tool("builder_spawn", args)
    return answer.structured_content


async def test_a_builder_leaves_nothing_the_daemons_or_the_owners_git_runs(
    deputy: Jailed, repo: Path, tmp_path: Path
):
    """Before, the builder's jail had the repository's whole ``.git`` writable: it planted
    hooks, ``core.fsmonitor`` and a linked ``info/exclude``, and the next spawn made the
    daemon (root here) run them outside the jail; the owner's ``git status`` too."""
    markers = tmp_path / "markers"
    markers.mkdir()
    git_dir = repo / ".git"
    hooks = ["post-checkout", "reference-transaction", "post-index-change"]
    plan = {
        "plant": [[str(git_dir / "hooks" / h), marker_script(markers, h), 0o755] for h in hooks],
        "append": [[str(git_dir / "config"), f"[core]\n\tfsmonitor = touch {markers}/fsm; true\n"]],
        "symlink": [[str(tmp_path / "owner-file"), str(git_dir / "info" / "exclude")]],
    }
    first = await spawn(deputy, repo, plan)
    tried = report(first["result"])
    assert all(v != "written" for v in {**tried["planted"], **tried["appended"]}.values()), tried
    assert all(v != "linked" for v in tried["linked"].values()), tried
    second = await spawn(deputy, repo, {})  # the daemon's git: worktree add, status, ...
    assert second["result"]["success"], second
    async with butler_client(f"{deputy.url}/mcp", timeout=120) as owner:
        await owner.call_tool("builder_prune", {"force": True})
    owners = await asyncio.create_subprocess_exec("git", "status", cwd=repo, stdout=DEVNULL)
    assert await owners.wait() == 0  # the owner's own, with the owner's config
    assert sorted(p.name for p in markers.iterdir()) == []
    assert not (tmp_path / "owner-file").exists()
