"""A builder's runtime is locked down like a triggered session, and no text meets a shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from butler.builders import launch
from tests.builders.conftest import AGENT, Builders, write_builder_butler
from tests.conftest import TEST_DSN
from tests.helpers import DaemonProcess, free_port

pytestmark = pytest.mark.slow

#: What the agent may find in its environment: the built one, and the terminal's.
ALLOWED_ENV = {"ANTHROPIC_API_KEY", "HOME", "PATH", "TRACEPARENT", "TERM", "COLORTERM", "LC_CTYPE"}


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True).stdout


def test_the_runtime_reaches_only_its_butler_with_its_session_id(builders: Builders):
    builder = builders.spawn("Fix bug")
    seen = builders.seen(builder)
    sid = builder["session_id"]
    assert seen["mcp"] == {
        "mcpServers": {
            "tester": {
                "type": "http",
                "url": f"{builders.daemon.url}/mcp?session={sid}",
                "headers": {"X-Butler-Session": sid},
            }
        }
    }
    assert set(seen["env"]) <= ALLOWED_ENV and "ANTHROPIC_API_KEY" in seen["env"]
    home = builders.data_dir / "butlers" / "tester" / "homes" / sid
    assert (home / "seen.json").is_file()  # HOME was the session's private home
    folder = builders.data_dir / "butlers" / "tester" / "builders" / builder["id"]
    assert not (folder / launch.SPEC_FILE).exists()  # read once, then deleted
    assert (folder.stat().st_mode & 0o777) == 0o700
    # The tmux server butler started holds none of the daemon's variables.
    server_env = tmux(builders.socket, "show-environment", "-g")
    assert "must-not-leak" not in server_env and "sk-test" not in server_env


def test_task_text_never_meets_a_shell(builders: Builders, tmp_path: Path):
    marker = tmp_path / "pwned"
    text = f"Fix $(touch {marker}) `touch {marker}`; touch {marker} && echo 'quote\" done"
    builder = builders.spawn(text)
    assert builders.seen(builder)["prompt"] == text  # byte for byte, through a file
    started = tmux(builders.socket, "list-panes", "-a", "-F", "#{pane_start_command}")
    assert "touch" not in started and "launch.py" in started
    assert not marker.exists()


def test_the_launch_spec_is_private(tmp_path: Path):
    spec = launch.write_spec(tmp_path, ["/bin/true"], {"ANTHROPIC_API_KEY": "sk"})
    assert (spec.stat().st_mode & 0o777) == 0o600
    with pytest.raises(FileExistsError):  # never reuses a spec someone else planted
        launch.write_spec(tmp_path, ["/bin/true"], {})


def test_the_launcher_runs_exactly_the_built_env_and_records_the_end(tmp_path: Path):
    script = "import json, os, sys; print(json.dumps(sorted(os.environ))); sys.exit(5)"
    spec = launch.write_spec(tmp_path, [sys.executable, "-c", script], {"ONLY": "this"})
    parent_env = {**os.environ, "TERM": "xterm", "SECRET": "daemon-only"}
    done = subprocess.run(
        launch.program(spec), env=parent_env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 5
    seen = set(json.loads(done.stdout))
    assert seen <= {"ONLY", "TERM", "LC_CTYPE"} and "SECRET" not in seen
    assert not spec.exists()
    assert launch.read_exit(tmp_path) == {"status": 5, "signal": None}


def test_a_runtime_without_an_interactive_mode_is_refused(
    roster, schema_name, repo, tmux_socket, _isolated_data_dir
):
    runtime = {"type": "command", "command": [sys.executable, str(AGENT)]}
    port = free_port()
    folder = write_builder_butler(roster, schema_name, port, runtime=runtime)
    env = {"BUTLER_TMUX_SOCKET": tmux_socket, "BUTLER_DATA_DIR": str(_isolated_data_dir)}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env):
        argv = [sys.executable, "-m", "butler.cli", "spawn", "Fix bug", "-c", str(folder)]
        done = subprocess.run(
            argv, cwd=repo, capture_output=True, text=True, env={**os.environ, **env}
        )
    assert done.returncode == 2
    assert done.stderr.startswith("butler: error: runtime command has no interactive mode")
    assert not (repo / ".builders").exists()


def test_spawn_says_how_to_start_a_daemon_that_is_not_running(roster, schema_name, repo):
    folder = write_builder_butler(roster, schema_name, free_port())
    argv = [sys.executable, "-m", "butler.cli", "spawn", "Fix bug", "-c", str(folder)]
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert f"start it with: butler run --config {folder}" in done.stderr
