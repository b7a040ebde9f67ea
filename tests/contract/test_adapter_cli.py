"""``butler adapter``: spawn / resume / check_status through files and exit codes.

A real daemon whose runtime is the shipped example external adapter, driven by
the real CLI as another orchestrator would drive it.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import DaemonProcess, free_port, wait_until, write_butler

pytestmark = pytest.mark.slow

ENV = '\n[butler.env]\noptional = ["FILE_AGENT_GATE"]\n'
BRIEF = """# LEGO: Authentication
## Responsibility
Handle user authentication and session management.
## Success Criteria
- Tests pass
"""


def adapter(config: Path, *args: str, env: dict[str, str] | None = None, stdin: str = ""):
    return subprocess.run(
        [sys.executable, "-m", "butler.cli", "adapter", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "BUTLER_CONFIG": str(config), **(env or {})},
        timeout=120,
    )


@pytest.fixture
def contract_daemon(adapter_roster, schema_name, _isolated_data_dir):
    port = free_port()
    folder = write_butler(
        adapter_roster,
        "orch",
        port=port,
        schema=schema_name,
        runtime={"type": "file-agent"},
        extra=ENV,
    )
    # The example agent holds each session until this gate file exists.
    gate = _isolated_data_dir / "gate"
    env = {"FILE_AGENT_GATE": str(gate), "BUTLER_DATA_DIR": str(_isolated_data_dir)}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        daemon.gate = gate
        yield daemon


def status_of(config: Path, session_id: str) -> str:
    done = adapter(config, "check_status", session_id)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_spawn_is_idempotent_while_active_and_state_is_kept(contract_daemon, tmp_path):
    config = contract_daemon.config_dir
    brief, state = tmp_path / "session_auth_brief.md", tmp_path / "lego_state_auth.json"
    brief.write_text(BRIEF)
    first = adapter(config, "spawn", str(brief), str(state), "Act as the orchestrator for Auth")
    assert first.returncode == 0, first.stderr
    session_id = first.stdout.strip()
    again = adapter(config, "spawn", str(brief), str(state), "Act as the orchestrator for Auth")
    assert again.stdout.strip() == session_id  # no second run while the first is active
    assert status_of(config, session_id) in ("pending", "active")
    assert json.loads(state.read_text())["status"] == "in-progress"

    contract_daemon.gate.touch()
    wait_until(lambda: status_of(config, session_id) == "completed", timeout=60, interval=0.3)
    saved = json.loads(state.read_text())
    assert saved["lego_name"] == "Authentication" and saved["status"] == "completed"
    assert saved["completed_substeps"] == ["spawned"] and saved["failure_count"] == 0
    log = Path(os.environ["BUTLER_DATA_DIR"]) / "butlers/orch/sessions" / session_id / "adapter.log"
    assert "spawned brief" in log.read_text()


def test_resume_continues_and_failure_is_counted(contract_daemon, tmp_path):
    config = contract_daemon.config_dir
    brief, state = tmp_path / "brief.md", tmp_path / "state.json"
    brief.write_text(BRIEF)
    contract_daemon.gate.touch()
    spawned = adapter(config, "spawn", "--wait", str(brief), str(state), "start")
    first = spawned.stdout.strip()
    assert status_of(config, first) == "completed"
    resumed = adapter(config, "resume", "--wait", first, str(state), "now FAIL please")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith(f"resumed {first} as ")
    assert resumed.stdout.strip().endswith(": failed")
    saved = json.loads(state.read_text())
    assert saved["status"] == "failed" and saved["failure_count"] == 1
    assert saved["resumed_from"] == first and saved["session_id"] != first


def test_a_prompt_on_standard_input_stays_out_of_argv(contract_daemon, tmp_path):
    config = contract_daemon.config_dir
    brief, state = tmp_path / "brief.md", tmp_path / "state.json"
    brief.write_text(BRIEF)
    contract_daemon.gate.touch()
    first = adapter(config, "spawn", "--wait", str(brief), str(state), "-", stdin="start")
    assert first.returncode == 0, first.stderr
    session = first.stdout.strip()
    resumed = adapter(config, "resume", "--wait", session, str(state), "-", stdin="now FAIL")
    assert resumed.stdout.strip().endswith(": failed")  # the agent read the piped words
    empty = adapter(config, "resume", session, str(state), "-", stdin=" \n")
    assert empty.returncode == 2
    assert empty.stderr.strip() == (
        "butler: error: PROMPT '-': standard input is empty; expected the prompt's text"
    )


def test_unknown_session_exits_non_zero_with_a_message(contract_daemon):
    unknown = "9e0f2a57-0000-4000-8000-000000000000"
    done = adapter(contract_daemon.config_dir, "check_status", unknown)
    assert done.returncode == 1 and "not found" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_daemon_not_running_says_how_to_start_it(adapter_roster, tmp_path):
    folder = write_butler(adapter_roster, "idle", port=free_port(), runtime={"type": "file-agent"})
    brief = tmp_path / "b.md"
    brief.write_text(BRIEF)
    done = adapter(folder, "spawn", str(brief), str(tmp_path / "s.json"), "go")
    assert done.returncode == 2
    assert f"start it with: butler run --config {folder}" in done.stderr


def test_missing_brief_and_bad_state_are_clear_errors(contract_daemon, tmp_path):
    config = contract_daemon.config_dir
    done = adapter(config, "spawn", str(tmp_path / "nope.md"), str(tmp_path / "s.json"), "go")
    assert done.returncode == 2 and "brief file not found" in done.stderr
    brief, state = tmp_path / "b.md", tmp_path / "s.json"
    brief.write_text(BRIEF)
    state.write_text("{not json")
    done = adapter(config, "spawn", str(brief), str(state), "go")
    assert done.returncode == 2 and "invalid JSON at line 1, column 2" in done.stderr


def test_wait_shows_a_spinner_on_a_terminal_and_nothing_on_a_pipe(contract_daemon, tmp_path):
    contract_daemon.gate.write_text("")
    brief, state = tmp_path / "b.md", tmp_path / "s.json"
    brief.write_text(BRIEF)
    piped = adapter(contract_daemon.config_dir, "spawn", "--wait", str(brief), str(state), "go")
    assert piped.returncode == 0 and piped.stderr == ""
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "butler.cli", "adapter", "resume", "--wait",
             piped.stdout.strip(), str(state), "again"],
            stdout=subprocess.PIPE,
            stderr=terminal,
            env={**os.environ, "BUTLER_CONFIG": str(contract_daemon.config_dir)},
            timeout=120,
        )  # fmt: skip
        os.close(terminal)
        terminal = -1
        shown = os.read(controller, 65536).decode()
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)
    assert done.returncode == 0
    assert "waiting for the session to finish" in shown
