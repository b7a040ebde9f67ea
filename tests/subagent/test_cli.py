"""`butler ask`, `butler chat` and `butler sources` as a person runs them: real processes."""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, wait_until
from tests.subagent.conftest import (
    FAKE_AGENT,
    REPORT,
    SourceTree,
    alive,
    cli_env,
    leftovers,
    write_config,
)

pytestmark = pytest.mark.slow

BUTLER = [sys.executable, "-m", "butler.cli"]


@pytest.fixture
def env(source_tree: SourceTree, temp_root: Path) -> dict[str, str]:
    """A config whose default agent is the fake agent, and the env pointing at it."""
    agents = {
        "fake": {
            "ask": [*REPORT, "{prompt_file}"],
            "chat": [sys.executable, str(FAKE_AGENT), "chat", str(temp_root / "m"), "5"],
        },
        "broken": {"ask": [sys.executable, str(FAKE_AGENT), "fail", "3", "quota exceeded"],
                   "chat": ["x"]},
        "hang": {"ask": [sys.executable, str(FAKE_AGENT), "hang", str(temp_root.parent / "pids")],
                 "chat": ["x"]},
    }  # fmt: skip
    write_config(
        source_tree.config_dir,
        sources=source_tree.as_config(),
        agents=agents,
        default_agent="fake",
    )
    return cli_env(source_tree.config_dir, temp_root)


def butler(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*BUTLER, *args], env=env, cwd=REPO, input=stdin, capture_output=True, text=True, timeout=60
    )


def test_ask_prints_the_answer(env: dict[str, str], temp_root: Path) -> None:
    result = butler("ask", "--sources", "langchain,docs", "How do I create a tool?", env=env)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "How do I create a tool?" in report["prompt"]
    assert "- ./langchain/\n- ./docs/" in report["prompt"]
    # No progress chatter when stderr is not a terminal.
    assert result.stderr == ""
    assert leftovers(temp_root) == []


def test_ask_shows_progress_on_a_terminal(env: dict[str, str]) -> None:
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.run(
            [*BUTLER, "ask", "-s", "docs", "q"],
            env=env,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            timeout=60,
        )
        os.close(terminal)
        terminal = -1
        shown = os.read(controller, 4096).decode()
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    assert proc.returncode == 0
    assert "asking fake…" in shown
    assert json.loads(proc.stdout)["prompt"]


def test_unknown_source_is_one_line_exit_2(env: dict[str, str]) -> None:
    result = butler("ask", "-s", "docs,nope", "q", env=env)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("butler: error: unknown source 'nope'; known sources: docs,")


def use_agent(source_tree: SourceTree, name: str) -> None:
    path = source_tree.config_dir / "config.toml"
    path.write_text(path.read_text().replace('default_agent = "fake"', f'default_agent = "{name}"'))


def test_agent_failure_exits_1_with_its_stderr(
    env: dict[str, str], source_tree: SourceTree, temp_root: Path
) -> None:
    use_agent(source_tree, "broken")
    result = butler("ask", "-s", "docs", "q", env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == "butler: error: agent 'broken' exited with status 3: quota exceeded\n"
    assert leftovers(temp_root) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_terminated_ask_stops_the_agent_and_cleans_up(
    signum: int, env: dict[str, str], source_tree: SourceTree, temp_root: Path
) -> None:
    use_agent(source_tree, "hang")
    pidfile = temp_root.parent / "pids"
    proc = subprocess.Popen([*BUTLER, "ask", "-s", "docs", "q"], env=env, cwd=REPO)
    try:
        wait_until(pidfile.exists, timeout=30)
        assert len(leftovers(temp_root)) == 1
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 128 + signum
    finally:
        proc.kill()
    agent, grandchild = json.loads(pidfile.read_text())
    wait_until(lambda: not alive(agent) and not alive(grandchild), timeout=15)
    assert leftovers(temp_root) == []


def test_invalid_template_message_names_the_file(
    env: dict[str, str], source_tree: SourceTree
) -> None:
    template = source_tree.config_dir / "prompt_template.md"
    template.write_text("just text\n")
    result = butler("ask", "-s", "docs", "q", env=env)
    assert result.returncode == 2
    assert result.stderr == (
        "butler: error: Invalid prompt template: missing required placeholders "
        f"${{question}}, ${{sourcesList}} (in {template})\n"
    )


def test_sources_option_is_required_and_not_empty(env: dict[str, str]) -> None:
    assert butler("ask", "q", env=env).returncode == 2
    result = butler("ask", "--sources", " , ", "q", env=env)
    assert result.returncode == 2
    assert "name at least one source" in result.stderr


def test_chat_attaches_stdio_and_exits_with_the_agent(env: dict[str, str], temp_root: Path) -> None:
    result = butler("chat", "--sources", "readme", env=env, stdin="hi there\n")
    assert result.returncode == 5
    first, *rest = result.stdout.splitlines()
    report = json.loads(first)
    assert report["prompt"] is None
    assert report["entries"]["readme"]["symlink"].endswith("README.md")
    assert "chat: you said 'hi there'" in rest
    assert "chat: stderr is inherited" in result.stderr
    assert leftovers(temp_root) == []


def test_sources_add_then_list(env: dict[str, str], tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    added = butler("sources", "add", "notes", str(notes), env=env)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(f"added notes (folder) -> {notes}")
    listed = butler("sources", "list", env=env)
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in listed.stdout.splitlines()]
    assert [row[:2] for row in rows if row] == [
        ["docs", "folder"],
        ["langchain", "git"],
        ["notes", "folder"],
        ["readme", "file"],
    ]
    again = butler("sources", "add", "notes", str(notes), env=env)
    assert again.returncode == 2
    assert "already exists" in again.stderr


def test_sources_remove_takes_out_one_entry_and_keeps_the_rest_as_written(
    env: dict[str, str], source_tree: SourceTree
) -> None:
    config = Path(env["BUTLER_CONFIG_HOME"]) / "config.toml"
    config.write_text("# my sources, kept as I wrote them\n" + config.read_text())
    before = config.read_text()
    removed = butler("sources", "remove", "langchain", env=env)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.startswith("removed langchain (")
    after = config.read_text()
    assert after == "".join(line for line in before.splitlines(True) if "langchain" not in line)
    listed = butler("sources", "list", env=env)
    assert "langchain" not in listed.stdout and "docs" in listed.stdout
    assert any(source_tree.git.iterdir())  # only the entry goes, never the files
    again = butler("sources", "remove", "langchain", env=env)
    assert again.returncode == 2
    assert again.stderr.startswith(
        f"butler: error: sources remove: no source named 'langchain' in {config}; there are: "
    )


@pytest.mark.parametrize(
    ("command", "example"),
    [
        (["ask"], 'butler ask --sources langchain "How do I create a tool?"'),
        (["chat"], "butler chat --sources langchain"),
        (["sources", "add"], "butler sources add langchain ~/src/langchain"),
        (["sources", "remove"], "butler sources remove langchain"),
    ],
)
def test_help_shows_examples(command: list[str], example: str, env: dict[str, str]) -> None:
    result = butler(*command, "--help", env={**env, "COLUMNS": "200"})
    assert result.returncode == 0
    assert "Examples" in result.stdout
    assert example in result.stdout
