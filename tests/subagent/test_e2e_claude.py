"""`butler ask` end to end: the genuine Claude Code CLI, offline, against the fake model.

The model is scripted to call Claude Code's built-in Read tool on a file that
exists only behind a source symlink, then answer. The test proves the real
CLI got the prompt text, could read through the symlink with the default
command's permissions, offered no MCP and no write or shell tool, and that
butler printed its answer and left nothing behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import claude_agent_sdk
import pytest

from tests.fakes.model_server import FakeModelServer, Text, ToolCall
from tests.helpers import REPO, require_jail
from tests.subagent.conftest import SourceTree, cli_env, leftovers, write_config

#: The Claude Code butler's sessions run; `butler ask` must run it too, with no claude on PATH.
BUNDLED = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
SECRET = "The secret word is PELICAN-42."
ANSWER = "The secret word is PELICAN-42 (from ./docs/notes.txt)."
OFFLINE = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "ANTHROPIC_API_KEY": "sk-fake-for-tests",
}


def tool_results(server: FakeModelServer) -> list[str]:
    """The text of every tool_result the CLI sent back to the model."""
    found = []
    for request in server.requests:
        if request.api != "anthropic" or not isinstance(request.body, dict):
            continue
        for message in request.body.get("messages") or []:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result":
                    found.append(json.dumps(block.get("content")))
    return found


def path_without_claude() -> str:
    """PATH minus every folder holding a ``claude``: only the bundled one can run."""
    folders = os.environ["PATH"].split(os.pathsep)
    return os.pathsep.join(f for f in folders if not (Path(f) / "claude").exists())


@pytest.mark.e2e
@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_butler_ask_with_genuine_claude(
    source_tree: SourceTree, temp_root: Path, tmp_path: Path, sandbox: str
) -> None:
    if sandbox == "bwrap":
        require_jail()
    assert BUNDLED.exists(), f"claude-agent-sdk ships no CLI at {BUNDLED}"
    (source_tree.folder / "notes.txt").write_text(SECRET + "\n", encoding="utf-8")
    # No [agents] table: the built-in claude-code command is what runs.
    write_config(source_tree.config_dir, sources=source_tree.as_config())
    home = tmp_path / "home"
    home.mkdir()

    with FakeModelServer() as server:
        # A relative path: the CLI resolves it against its cwd, the temp folder.
        server.script = [ToolCall("Read", {"file_path": "docs/notes.txt"}), Text(ANSWER)]
        env = cli_env(
            source_tree.config_dir,
            temp_root,
            **OFFLINE,
            ANTHROPIC_BASE_URL=server.url,
            HOME=str(home),
            CLAUDE_CONFIG_DIR=str(home / ".claude"),
            PATH=path_without_claude(),
            BUTLER_SANDBOX=sandbox,
        )
        result = subprocess.run(
            [sys.executable, "-m", "butler.cli", "ask", "-s", "docs,langchain", "What is it?"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == ANSWER + "\n"
        # The file's content came back to the model through the symlink.
        assert any(SECRET in text for text in tool_results(server)), tool_results(server)
        last = [r.body for r in server.requests if r.api == "anthropic"][-1]
        # The whole conversation: the prompt text itself reached the model.
        conversation = json.dumps(last["messages"])
        assert "What is it?" in conversation
        assert "- ./docs/\\n- ./langchain/" in conversation
        offered = {tool["name"] for tool in last.get("tools") or []}
    assert {"Read", "Glob", "Grep"} <= offered
    assert not offered & {"Bash", "Edit", "Write"}
    assert not any(name.startswith("mcp__") for name in offered)
    assert leftovers(temp_root) == []


@pytest.mark.e2e
def test_butler_ask_with_no_key_shows_what_claude_said(
    source_tree: SourceTree, temp_root: Path, tmp_path: Path
) -> None:
    write_config(source_tree.config_dir, sources=source_tree.as_config())
    home = tmp_path / "home"
    home.mkdir()
    offline = {k: v for k, v in OFFLINE.items() if k != "ANTHROPIC_API_KEY"}
    env = cli_env(source_tree.config_dir, temp_root, **offline, HOME=str(home))
    env.pop("ANTHROPIC_API_KEY", None)
    env["PATH"] = path_without_claude()
    result = subprocess.run(
        [sys.executable, "-m", "butler.cli", "ask", "-s", "docs", "What is it?"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    # Claude gives its reason on stdout; the one error line carries it.
    assert "Not logged in" in result.stderr, result.stderr
    assert leftovers(temp_root) == []
