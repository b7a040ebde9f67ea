"""The builder modes of docs/builders.md, through ``butler spawn``.

Each runs the real CLI against a real daemon: a git worktree in a throwaway
repository, a detached session on a private tmux server running the
interactive test agent, and the session row in PostgreSQL.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tests.builders.conftest import Builders

pytestmark = pytest.mark.slow


def assert_builder_is_real(builders: Builders, builder: dict, branch: str) -> None:
    """Branch, worktree on it, tmux session showing the agent's prompt line, running row."""
    assert builder["branch"] == branch
    assert builders.git("branch", "--list", branch).strip().endswith(branch)
    worktree = Path(builder["worktree"])
    assert worktree == builders.repo / ".builders" / builder["id"]
    assert f"worktree {worktree}\nHEAD" in builders.git("worktree", "list", "--porcelain")
    assert builders.git("-C", str(worktree), "branch", "--show-current").strip() == branch
    builders.wait_screen(builder, "agent> ")
    row = builders.row(builder["session_id"])
    assert row["status"] == "running" and row["runtime"] == "command"
    assert row["metadata"]["tmux_session"] == builder["tmux_session"]
    assert row["metadata"]["repo"] == str(builders.repo)
    assert builders.seen(builder)["cwd"] == str(worktree)


def test_1_spec_mode_keeps_the_project_behaviour(builders: Builders):
    builder = builders.spawn("-p", "0009")
    assert builder["id"] == "0009" and builder["type"] == "spec"
    assert_builder_is_real(builders, builder, "builder/0009-terminal-click")
    prompt = (
        "Implement the feature specified in specs/0009-terminal-click.md. "
        "Follow the plan in plans/0009-terminal-click.md."
    )
    assert builders.seen(builder)["prompt"] == prompt
    assert f"PROMPT<<{prompt}>>" in builders.screen(builder)
    meta = builders.row(builder["session_id"])["metadata"]
    assert meta["spec"] == "specs/0009-terminal-click.md"
    assert meta["plan"] == "plans/0009-terminal-click.md"
    assert "ROLE: builder" in builders.seen(builder)["system"]


def test_2_task_text_becomes_the_initial_prompt(builders: Builders):
    builder = builders.spawn("Fix bug")
    digest = hashlib.sha256(b"Fix bug").hexdigest()[:4]
    assert re.fullmatch(rf"task-{digest}-[a-z0-9]{{4}}", builder["id"])
    assert_builder_is_real(builders, builder, f"builder/{builder['id']}")
    assert "PROMPT<<Fix bug>>" in builders.screen(builder)
    row = builders.row(builder["session_id"])
    assert row["type"] == "task" and row["prompt"] == "Fix bug"
    assert row["metadata"]["task"] == "Fix bug"
    assert "ROLE: builder" in builders.seen(builder)["system"]


def test_3_task_with_files_lists_them_as_context(builders: Builders):
    builder = builders.spawn("Fix bug", "--files", "src/auth.ts,src/login.ts")
    expected = "Fix bug\n\nRelevant files: src/auth.ts, src/login.ts"
    assert builders.seen(builder)["prompt"] == expected
    assert builders.row(builder["session_id"])["metadata"]["files"] == [
        "src/auth.ts",
        "src/login.ts",
    ]
    builders.wait_screen(builder, "Relevant files: src/auth.ts, src/login.ts")


def test_4_explicit_task_flag(builders: Builders):
    builder = builders.spawn("--task", "Refactor")
    assert builder["type"] == "task" and builder["id"].startswith("task-")
    assert_builder_is_real(builders, builder, f"builder/{builder['id']}")
    assert "PROMPT<<Refactor>>" in builders.screen(builder)


def test_5_protocol_mode_loads_the_protocol(builders: Builders):
    builder = builders.spawn("--protocol", "cleanup")
    assert re.fullmatch(r"protocol-cleanup-\d{10}", builder["id"])
    assert_builder_is_real(builders, builder, f"builder/{builder['id']}")
    protocol_md = builders.folder / "protocols" / "cleanup" / "protocol.md"
    prompt = builders.seen(builder)["prompt"]
    assert prompt == f"You are running the cleanup protocol.\n\nStart by reading {protocol_md}"
    row = builders.row(builder["session_id"])
    assert row["type"] == "protocol" and row["metadata"]["protocol"] == "cleanup"
    # No role of its own: the builder role.
    assert "ROLE: builder" in builders.seen(builder)["system"]


def test_6_protocol_arguments_go_into_the_prompt_as_json(builders: Builders):
    builder = builders.spawn("--protocol", "experiment", "--args", '{"hypothesis":"test"}')
    prompt = builders.seen(builder)["prompt"]
    assert 'Protocol arguments:\n```json\n{\n  "hypothesis": "test"\n}\n```' in prompt
    meta = builders.row(builder["session_id"])["metadata"]
    assert meta["protocol_args"] == {"hypothesis": "test"}


def test_7_shell_mode_is_a_bare_session(builders: Builders):
    builder = builders.spawn("--shell")
    assert re.fullmatch(r"shell-\d{10}-[a-z0-9]{4}", builder["id"])
    assert_builder_is_real(builders, builder, f"builder/{builder['id']}")
    seen = builders.seen(builder)
    assert seen["prompt"] == "" and "PROMPT<<>>" in builders.screen(builder)
    assert seen["system"].strip() == "You are the test butler."  # no role
    assert builders.row(builder["session_id"])["type"] == "shell"


def test_8_shell_with_a_custom_role(builders: Builders):
    (builders.repo / "roles").mkdir()
    (builders.repo / "roles" / "custom.md").write_text("ROLE: custom. Only look around.\n")
    builder = builders.spawn("--shell", "--role", "custom.md")  # a role of the repository
    assert "ROLE: custom. Only look around." in builders.seen(builder)["system"]
    assert "ROLE: builder" not in builders.seen(builder)["system"]
    by_name = builders.spawn("--shell", "--role", "reviewer")  # a role of the butler
    assert "ROLE: reviewer" in builders.seen(by_name)["system"]


def test_11_the_same_task_twice_gets_two_builders(builders: Builders):
    first = builders.spawn("Fix bug")
    second = builders.spawn("Fix bug")
    assert first["id"] != second["id"]
    assert first["id"][:9] == second["id"][:9]  # task-{hash4}- names the task
    for builder in (first, second):
        assert_builder_is_real(builders, builder, f"builder/{builder['id']}")


def test_12_a_protocol_role_takes_precedence(builders: Builders):
    protocol = builders.folder / "protocols" / "x"
    protocol.mkdir()
    (protocol / "protocol.md").write_text("# X\n")
    (protocol / "role.md").write_text("ROLE: x-specialist.\n")
    builder = builders.spawn("--protocol", "x")
    system = builders.seen(builder)["system"]
    assert "ROLE: x-specialist." in system and "ROLE: builder" not in system
    assert builders.row(builder["session_id"])["metadata"]["role"] == str(protocol / "role.md")
