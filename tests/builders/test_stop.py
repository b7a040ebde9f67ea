"""Ending builders: ``butler stop``, a runtime whose end nobody saw, ``--runtime`` checks."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from tests.builders.conftest import Builders, write_builder_butler
from tests.helpers import free_port, wait_until

pytestmark = pytest.mark.slow


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pane_pid(builders: Builders, builder: dict) -> int:
    done = subprocess.run(
        ["tmux", "-L", builders.socket, "display-message", "-p", "-t",
         f"={builder['tmux_session']}:", "#{pane_pid}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return int(done.stdout)


def start_child(builders: Builders, builder: dict) -> int:
    """Have the agent start a child process of its own; its pid."""
    builders.wait_screen(builder, "agent> ")
    subprocess.run(
        ["tmux", "-L", builders.socket, "send-keys", "-t", f"={builder['tmux_session']}:",
         "child", "Enter"],
        check=True,
    )  # fmt: skip
    shown = builders.wait_screen(builder, "CHILD<<")
    return int(re.search(r"CHILD<<(\d+)>>", shown).group(1))


def test_stop_ends_the_runtime_tree_and_records_it_cancelled(builders: Builders):
    builder = builders.spawn("Fix bug")
    launcher = pane_pid(builders, builder)
    child = start_child(builders, builder)
    assert alive(child) and alive(launcher)

    done = builders.cli("builders", "stop", builder["id"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"builder {builder['id']} stopped (cancelled)")

    row = builders.row(builder["session_id"])
    assert row["status"] == "cancelled" and row["error"] == "stopped with butler builders stop"
    assert row["metadata"]["stop_requested_at"] and row["metadata"]["ended_at"]
    assert "agent> " in row["output"]  # its last screen is kept
    # The whole tree is gone: the launcher, the agent, the agent's own child.
    wait_until(lambda: not alive(child) and not alive(launcher), timeout=10)

    again = builders.cli("builders", "stop", builder["id"])
    assert again.returncode == 2
    assert again.stderr.strip() == (
        f"butler: error: builder {builder['id']} is not running (status cancelled); nothing to stop"
    )


def test_a_runtime_that_ended_unseen_is_recorded_ended(builders: Builders):
    builder = builders.spawn("Fix bug")
    builders.wait_screen(builder, "agent> ")
    builders.daemon.stop()
    # While no daemon watches, the runtime goes without an exit record (as in a reboot).
    os.killpg(pane_pid(builders, builder), signal.SIGKILL)
    subprocess.run(
        ["tmux", "-L", builders.socket, "kill-session", "-t", f"={builder['tmux_session']}"],
        check=True,
    )
    builders.daemon.start()

    row = wait_until(
        lambda: (r := builders.row(builder["session_id"]))["status"] != "running" and r,
        timeout=20,
    )
    assert row["status"] == "ended", row["error"]
    assert "without an exit record" in row["error"]
    listed = builders.cli("builders", "list")
    assert "ended" in listed.stdout


def test_an_unknown_runtime_is_one_line_naming_the_allowed_ones(roster, schema_name, repo):
    folder = write_builder_butler(roster, schema_name, free_port())
    argv = [
        sys.executable,
        "-m",
        "butler.cli",
        "builders",
        "spawn",
        "--runtime",
        "cladue",
        "Fix bug",
    ]
    done = subprocess.run(
        [*argv, "-c", str(folder)], cwd=repo, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("butler: error: --runtime: unknown runtime 'cladue'; ")
    assert "expected one of claude-code, codex, command, copilot, gemini, opencode" in done.stderr


def test_headless_builders_run_the_butlers_own_runtime(builders: Builders):
    done = builders.cli("builders", "spawn", "--runtime", "codex", "--headless", "Fix bug")
    assert done.returncode == 2
    assert "--runtime codex with --headless" in done.stderr
    assert "own runtime (command)" in done.stderr
    assert not (builders.repo / ".builders").exists()
