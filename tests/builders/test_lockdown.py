"""A builder's runtime is locked down like a triggered session, and no text meets a shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from butler.runtimes import launcher
from tests.builders.conftest import AGENT, Builders, write_builder_butler
from tests.conftest import TEST_DSN
from tests.helpers import TEST_TOKEN, DaemonProcess, free_port

pytestmark = pytest.mark.slow

#: What the agent may find in its environment: the built one, and the terminal's.
ALLOWED_ENV = {"ANTHROPIC_API_KEY", "HOME", "PATH", "TRACEPARENT", "TERM", "COLORTERM", "LC_CTYPE"}


def tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True).stdout


def test_the_runtime_reaches_only_its_butler_with_its_session_token(builders: Builders):
    builder = builders.spawn("Fix bug")
    seen = builders.seen(builder)
    sid = builder["session_id"]
    server = seen["mcp"]["mcpServers"]["tester"]
    assert list(seen["mcp"]["mcpServers"]) == ["tester"]
    assert (server["type"], server["url"]) == ("http", f"{builders.daemon.url}/mcp")
    token = server["headers"]["Authorization"].removeprefix("Bearer ")
    assert list(server["headers"]) == ["Authorization"]
    assert token != TEST_TOKEN and sid not in token  # its own capability, not the owner's
    assert set(seen["env"]) <= ALLOWED_ENV and "ANTHROPIC_API_KEY" in seen["env"]
    home = builders.data_dir / "butlers" / "tester" / "homes" / sid
    assert (home / "seen.json").is_file()  # HOME was the session's private home
    folder = builders.data_dir / "butlers" / "tester" / "builders" / builder["id"]
    assert not (folder / launcher.SPEC_FILE).exists()  # read once, then deleted
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
    assert "touch" not in started and f"/{launcher.SCRIPT_FILE}" in started
    assert not marker.exists()


def test_the_launch_spec_is_private(tmp_path: Path):
    launcher.write_launcher(tmp_path, ["/bin/true"], {"ANTHROPIC_API_KEY": "sk"})
    assert ((tmp_path / launcher.SPEC_FILE).stat().st_mode & 0o777) == 0o600
    with pytest.raises(FileExistsError):  # never reuses a spec someone else planted
        launcher.write_launcher(tmp_path, ["/bin/true"], {})


def test_the_launcher_runs_exactly_the_built_env_and_records_the_end(tmp_path: Path):
    script = "import json, os, sys; print(json.dumps(sorted(os.environ))); sys.exit(5)"
    program = launcher.write_launcher(
        tmp_path,
        [sys.executable, "-c", script],
        {"ONLY": "this"},
        passthrough=launcher.TERMINAL_VARS,
        supervise=True,
    )
    parent_env = {**os.environ, "TERM": "xterm", "SECRET": "daemon-only"}
    done = subprocess.run([program], env=parent_env, capture_output=True, text=True, check=False)
    assert done.returncode == 5
    seen = set(json.loads(done.stdout))
    assert seen <= {"ONLY", "TERM", "LC_CTYPE"} and "SECRET" not in seen
    assert not (tmp_path / launcher.SPEC_FILE).exists()
    assert launcher.read_exit(tmp_path) == {"status": 5, "signal": None}


def test_the_launcher_starts_no_site_packages_and_no_butler(tmp_path: Path):
    # Every session pays the launcher's start: a full interpreter importing butler
    # cost ~60 ms of CPU, most of what a trigger cost.
    lines = launcher.write_launcher(tmp_path, ["/bin/true"]).read_text().splitlines()
    assert lines[0] == f"#!{sys.executable} -IS"
    # Everything the launcher runs before it hands over, then what it has loaded.
    probe = [*lines[1:-1], "print(' '.join(sorted(sys.modules)))"]
    loaded = subprocess.run(
        [sys.executable, "-I", "-S", "-c", "\n".join(probe)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "launch_main" in loaded
    assert not {"site", "json", "re", "pathlib"} & set(loaded)
    assert not any(name.startswith("butler") for name in loaded)


def test_a_runtime_without_an_interactive_mode_is_refused(
    roster, schema_name, repo, tmux_socket, _isolated_data_dir
):
    runtime = {"type": "command", "command": [sys.executable, str(AGENT)]}
    port = free_port()
    folder = write_builder_butler(roster, schema_name, port, runtime=runtime)
    env = {"BUTLER_TMUX_SOCKET": tmux_socket, "BUTLER_DATA_DIR": str(_isolated_data_dir)}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env):
        argv = [
            sys.executable,
            "-m",
            "butler.cli",
            "builders",
            "spawn",
            "Fix bug",
            "-c",
            str(folder),
        ]
        done = subprocess.run(
            argv, cwd=repo, capture_output=True, text=True, env={**os.environ, **env}
        )
    assert done.returncode == 2
    assert done.stderr.startswith("butler: error: runtime command has no interactive mode")
    assert not (repo / ".builders").exists()


def test_spawn_says_how_to_start_a_daemon_that_is_not_running(roster, schema_name, repo):
    folder = write_builder_butler(roster, schema_name, free_port())
    argv = [sys.executable, "-m", "butler.cli", "builders", "spawn", "Fix bug", "-c", str(folder)]
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert f"start it with: butler run --config {folder}" in done.stderr
