"""The four TUIs' commands for builders (pure parts): lockdown, trust by config, no task
in argv. tests/builders/test_tui_builders.py runs them for real."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from butler.runtimes.base import Invocation, McpEndpoint, RuntimeFailure
from butler.runtimes.registry import get_adapter
from butler.runtimes.settings import RuntimeConfig
from butler.runtimes.terminals import MAX_CONFIG_BYTES, codex_project_servers, copilot_state

TASK = "Fix the login bug; token sk-live-123"


def invocation(tmp_path: Path) -> Invocation:
    cwd = tmp_path / "repo" / ".builders" / "task-1"
    (cwd / ".git").parent.mkdir(parents=True)
    (cwd / ".git").write_text("gitdir: elsewhere\n")  # a worktree is its own project root
    return Invocation(
        prompt=TASK,
        system_prompt="You are general.",
        cwd=cwd,
        workdir=tmp_path / "work",
        home=tmp_path / "home",
        env={"PATH": "/usr/bin:/bin"},
        mcp=McpEndpoint("general", "http://127.0.0.1:1/mcp", {"Authorization": "Bearer tok-9"}),
        max_turns=5,
        timeout_s=60,
        model="m1",
        config_dir=tmp_path / "butler",
    )


@pytest.mark.parametrize("runtime", ["codex", "gemini", "opencode", "copilot"])
def test_no_task_and_no_token_on_the_command_line(tmp_path, runtime):
    adapter = get_adapter(runtime, RuntimeConfig(type=runtime, cli_path="/bin/true"))
    command = adapter.interactive_command(invocation(tmp_path))
    line = " ".join(command.argv)
    assert "Fix the login bug" not in line and "tok-9" not in line
    assert TASK in command.typed_prompt and command.ready
    assert command.argv[0] == "/bin/true"


def test_codex_trusts_the_worktree_and_switches_off_project_servers(tmp_path):
    inv = invocation(tmp_path)
    (inv.cwd / ".codex").mkdir()
    (inv.cwd / ".codex" / "config.toml").write_text(
        '[mcp_servers.decoy]\nurl = "http://x"\n[mcp_servers.general]\nurl = "http://y"\n'
        '[mcp_servers."a.b"]\nurl = "http://z"\n'
    )
    # Beyond the worktree (its project root) Codex reads nothing, and neither does this.
    (tmp_path / "repo" / ".codex").mkdir()
    (tmp_path / "repo" / ".codex" / "config.toml").write_text('[mcp_servers.far]\nurl = "u"\n')
    assert codex_project_servers(inv.cwd) == ["decoy", "general"]
    adapter = get_adapter("codex", RuntimeConfig(type="codex", cli_path="/bin/true"))
    command = adapter.interactive_command(inv)
    assert "mcp_servers.decoy.enabled=false" in command.argv
    assert "mcp_servers.general.enabled=false" not in command.argv  # the butler's own
    assert ["-a", "never", "-s", "danger-full-access"] == command.argv[-4:]
    config = command.files[inv.home / ".codex" / "config.toml"]
    assert f'[projects."{inv.cwd}"]\ntrust_level = "trusted"' in config
    assert 'developer_instructions = "You are general."' in config
    assert command.env["BUTLER_MCP_TOKEN"] == "tok-9"


def test_copilot_trusts_the_worktree_keeping_what_it_recorded(tmp_path):
    state = tmp_path / "config.json"
    state.write_text('// managed automatically\n{"trustedFolders": ["/a"], "firstLaunchAt": "x"}')
    written = json.loads(copilot_state(tmp_path, "config.json", Path("/w")))
    assert written == {"trustedFolders": ["/a", "/w"], "firstLaunchAt": "x"}
    assert json.loads(copilot_state(tmp_path, "none.json", Path("/w"))) == {
        "trustedFolders": ["/w"]
    }


def test_copilot_reads_the_server_from_a_file_with_its_token(tmp_path):
    inv = invocation(tmp_path)
    adapter = get_adapter("copilot", RuntimeConfig(type="copilot", cli_path="/bin/true"))
    command = adapter.interactive_command(inv)
    mcp_file = inv.workdir / "copilot-mcp.json"
    assert f"@{mcp_file}" in command.argv
    servers = json.loads(command.files[mcp_file])["mcpServers"]
    assert list(servers) == ["general"] and servers["general"]["tools"] == ["*"]
    assert command.typed_prompt.startswith("<system>\nYou are general.\n</system>")


def test_opencode_reads_the_owners_provider_file_from_the_butler_folder(tmp_path):
    inv = invocation(tmp_path)
    inv.config_dir.mkdir()
    (inv.config_dir / "opencode.json").write_text('{"provider": {"fake": {"name": "F"}}}')
    adapter = get_adapter("opencode", RuntimeConfig(type="opencode", cli_path="/bin/true"))
    command = adapter.interactive_command(inv)
    config = json.loads(command.env["OPENCODE_CONFIG_CONTENT"])
    assert config["provider"] == {"fake": {"name": "F"}}
    assert list(config["mcp"]) == ["general"]
    assert command.argv[1:4] == [str(inv.cwd), "--agent", "butler"]


@pytest.mark.parametrize("plant", ["fifo", "zero", "link", "huge"])
def test_codex_refuses_a_project_config_it_cannot_read_whole_without_hanging(tmp_path, plant):
    """The worktree is repository content an earlier builder could commit: a FIFO or a link
    to /dev/zero there neither hangs nor floods the daemon, and what Codex would read but
    the butler cannot (a link, a huge file) refuses the start rather than leaving a server on."""
    inv = invocation(tmp_path)
    (inv.cwd / ".codex").mkdir()
    config = inv.cwd / ".codex" / "config.toml"
    elsewhere = tmp_path / "servers.toml"
    elsewhere.write_text('[mcp_servers.decoy]\nurl = "http://x"\n')
    if plant == "fifo":
        os.mkfifo(config)
    elif plant == "zero":
        os.symlink("/dev/zero", config)
    elif plant == "link":
        os.symlink(elsewhere, config)
    else:
        config.write_text('[mcp_servers.decoy]\nurl = "http://x"\n' + "#" * MAX_CONFIG_BYTES)
    outcome: list[object] = []

    def servers() -> None:
        try:
            outcome.append(codex_project_servers(inv.cwd))
        except RuntimeFailure as e:
            outcome.append(e)

    reader = threading.Thread(target=servers, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), f"a planted {plant} held the daemon"
    assert isinstance(outcome[0], RuntimeFailure), outcome
    assert "config.toml" in str(outcome[0]) and "regular file" in str(outcome[0])
