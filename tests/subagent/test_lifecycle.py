"""chat(), and how every run ends: exit, failure, time-out, cancellation.

Nothing may outlive a run: not the temp folder, not the agent, not what the
agent started.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from butler.subagent.runner import AgentTimedOut
from tests.helpers import eventually
from tests.subagent.conftest import FAKE_AGENT, RunnerFactory, alive, gone, leftovers

pytestmark = pytest.mark.slow


def chat_command(marker: Path, code: int) -> list[str]:
    return [sys.executable, str(FAKE_AGENT), "chat", str(marker), str(code), "{workdir}"]


@pytest.fixture
def typed_stdin() -> Iterator[None]:
    """Our own file descriptor 0 becomes a pipe holding one typed line."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"hello agent\n")
    os.close(write_end)
    saved = os.dup(0)
    os.dup2(read_end, 0)
    os.close(read_end)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)


async def test_chat_inherits_stdio_and_returns_exit_status(
    make_runner: RunnerFactory,
    temp_root: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    typed_stdin: None,
) -> None:
    marker = tmp_path / "exited"
    runner = make_runner(chat=chat_command(marker, 7))
    code = await runner.chat(["langchain", "docs"])
    assert code == 7
    # The marker is written as the agent exits: chat() waited for it.
    assert marker.read_text() == "exited"
    out, err = capfd.readouterr()
    report = json.loads(out.splitlines()[0])
    assert "chat: you said 'hello agent'" in out
    assert "chat: stderr is inherited" in err
    # What the agent saw: the folder as its cwd, symlinks, empty MCP configs, no prompt.
    assert report["argv"][-1] == report["cwd"]
    assert report["entries"]["langchain"]["symlink"].endswith("langchain")
    assert json.loads(report["mcp"][".mcp.json"]) == {}
    assert report["prompt"] is None
    assert "prompt.md" not in report["entries"]
    assert gone(report["cwd"])
    assert leftovers(temp_root) == []


async def test_chat_cleans_up_after_a_failing_agent(
    make_runner: RunnerFactory, temp_root: Path, tmp_path: Path
) -> None:
    runner = make_runner(chat=[sys.executable, str(FAKE_AGENT), "fail", "4", "bye"])
    assert await runner.chat(["docs"]) == 4
    assert leftovers(temp_root) == []


async def test_chat_does_not_need_a_prompt_template(
    make_runner: RunnerFactory, tmp_path: Path, typed_stdin: None
) -> None:
    runner = make_runner(chat=chat_command(tmp_path / "m", 0))
    (runner.config.folder / "prompt_template.md").write_text("no placeholders", encoding="utf-8")
    assert await runner.chat(["docs"]) == 0


async def test_timeout_kills_the_agent_and_its_children(
    make_runner: RunnerFactory, temp_root: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    runner = make_runner(ask=[sys.executable, str(FAKE_AGENT), "hang", str(pidfile)])
    with pytest.raises(AgentTimedOut, match=r"gave no answer within 1\.5 s"):
        await runner.ask(["docs"], "q", timeout_s=1.5)
    agent, grandchild = json.loads(pidfile.read_text())
    await eventually(lambda: not alive(agent) and not alive(grandchild))
    assert leftovers(temp_root) == []


async def test_cancellation_kills_the_process_group_and_removes_the_folder(
    make_runner: RunnerFactory, temp_root: Path, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pids"
    runner = make_runner(ask=[sys.executable, str(FAKE_AGENT), "hang", str(pidfile)])
    task = asyncio.create_task(runner.ask(["docs"], "q"))
    # The file exists before its pids are written in it: wait for both.
    await eventually(lambda: pidfile.exists() and pidfile.read_text().strip().endswith("]"))
    assert len(leftovers(temp_root)) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    agent, grandchild = json.loads(pidfile.read_text())
    await eventually(lambda: not alive(agent) and not alive(grandchild))
    assert leftovers(temp_root) == []


async def test_leftover_of_a_killed_run_is_swept(
    make_runner: RunnerFactory, temp_root: Path
) -> None:
    # A folder whose owner process is gone (a butler killed by SIGKILL) ...
    stale = temp_root / "butler-ask-00000000-dead"
    stale.mkdir()
    (stale / ".owner-pid").write_text("999999999")
    await make_runner().ask(["docs"], "q")
    # ... is removed by the next run.
    assert not stale.exists()
