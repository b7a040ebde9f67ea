"""``butler trigger``, ``butler sessions``, ``butler logs`` against a real daemon.

The daemon runs the ``command`` runtime (jailed, as by default): a bash line
that answers, fails with a message on stderr, or takes a while, by prompt.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.fakes.script import Hang, ToolCall
from tests.helpers import REPO, DaemonProcess, free_port, wait_until, write_butler

pytestmark = pytest.mark.slow

BUTLER = Path(sys.executable).with_name("butler")
SCRIPT = (
    'case "$1" in '
    "fail) echo 'the model API key is missing: set ANTHROPIC_API_KEY' >&2; exit 3;; "
    "login) echo 'Not logged in · Please run /login'; exit 1;; "
    "long) printf 'a very long error %.0s' $(seq 40) >&2; exit 3;; "
    "slow) until [ -e release ]; do sleep 0.1; done; echo 'done slowly';; "
    '*) echo "You asked: $1";; esac'
)
RUNTIME = {"type": "command", "command": ["bash", "-c", SCRIPT, "butler", "{prompt}"]}


def butler(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run(
        [str(BUTLER), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env={**env, "COLUMNS": "250"},
        cwd=REPO,
        timeout=120,
    )


@pytest.fixture
def daemon(roster, schema_name, pg_dsn):
    port = free_port()
    folder = write_butler(roster, "shell", port=port, schema=schema_name, runtime=RUNTIME)
    with DaemonProcess(folder, port=port, database_url=pg_dsn) as running:
        yield running


def test_trigger_prints_the_answer_and_sessions_lists_it(daemon):
    folder = str(daemon.config_dir)
    done = butler("trigger", "-c", folder, "what is due?")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You asked: what is due?\n"

    listed = butler("sessions", "-c", folder, "--json")
    rows = json.loads(listed.stdout)
    assert [(r["status"], r["trigger_source"]) for r in rows] == [("succeeded", "external")]
    table = butler("sessions", "-c", folder)
    # The id's first digits, as the dashboard shows them: what butler logs takes.
    assert rows[0]["id"][:8] in table.stdout and "succeeded" in table.stdout
    assert rows[0]["id"] not in table.stdout


def test_a_failed_session_is_its_error_in_the_terminal_exit_1_and_logs_shows_it_exit_0(daemon):
    folder = str(daemon.config_dir)
    failed = butler("trigger", "-c", folder, "fail")
    assert failed.returncode == 1
    assert "the model API key is missing: set ANTHROPIC_API_KEY" in failed.stderr
    assert failed.stderr.startswith("butler: error: ")

    rows = json.loads(butler("sessions", "-c", folder, "--json").stdout)
    session = rows[0]["id"]
    table = butler("sessions", "-c", folder, "--status", "failed")
    line = next(line for line in table.stdout.splitlines() if session[:8] in line)
    assert "failed" in line and "ANTHROPIC_API_KEY" in line  # the error's first line
    assert f"butler logs {session[:8]} -c {folder}" in failed.stderr  # an id that pastes

    shown = butler("logs", session[:8], "-c", folder)
    assert shown.returncode == 0, shown.stderr  # shown as asked: it is the session that failed
    assert "prompt:\n  fail" in shown.stdout
    assert "the model API key is missing" in shown.stdout
    assert "tool calls (0):" in shown.stdout


def test_a_failed_runtime_s_login_notice_is_never_printed_as_the_answer(daemon):
    folder = str(daemon.config_dir)
    failed = butler("trigger", "-c", folder, "login")
    assert failed.returncode == 1
    assert failed.stdout == ""  # a script reading the answer gets none
    assert "the runtime printed, before it failed:\n  Not logged in" in failed.stderr
    session = json.loads(butler("sessions", "-c", folder, "--json").stdout)[0]["id"]
    shown = butler("logs", session, "-c", folder).stdout
    assert "answer:" not in shown
    assert "printed before it ended (no answer):\n  Not logged in" in shown


def in_a_terminal(*args: str, columns: int) -> list[str]:
    """``butler ARGS`` on a terminal ``columns`` wide; the lines it drew."""
    import fcntl
    import pty
    import struct
    import termios

    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "COLUMNS")}
    proc = subprocess.Popen(
        [str(BUTLER), *args], stdout=secondary, stderr=secondary, env=env, cwd=REPO
    )
    os.close(secondary)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal closed: the command exited
            break
        if not chunk:
            break
        seen.extend(chunk)
    proc.wait(timeout=60)
    os.close(primary)
    text = seen.decode(errors="replace")
    return [line for line in text.replace("\x1b", "").splitlines() if line.strip()]


def test_the_sessions_table_fits_the_terminal_one_line_per_session(daemon):
    folder = str(daemon.config_dir)
    for prompt in ("long", "hello", "fail"):
        butler("trigger", "-c", folder, prompt)
    for columns in (80, 110):
        lines = in_a_terminal("sessions", "-c", folder, columns=columns)
        drawn = [line for line in lines if "│" in line]
        plain = [re.sub(r"\[[0-9;]*m", "", line) for line in drawn]
        assert all(len(line) <= columns for line in plain), "\n".join(plain)
        rows = [line for line in plain if re.search(r"│ [0-9a-f]{8} ", line)]
        assert len(rows) == 3, "\n".join(plain)  # one line each: nothing wrapped
        assert sum("…" in row for row in rows) == 2  # the errors, cut to what fits
    assert any("a very long" in row for row in rows)


def test_the_prompt_can_come_from_stdin(daemon):
    done = butler("trigger", "-c", str(daemon.config_dir), "-", stdin="from a file")
    assert done.stdout == "You asked: from a file\n", done.stderr


def test_logs_follow_waits_for_the_running_session_to_end(daemon):
    folder = str(daemon.config_dir)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    slow = subprocess.Popen(
        [str(BUTLER), "trigger", "-c", folder, "slow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:

        def running() -> str | None:
            rows = json.loads(butler("sessions", "-c", folder, "--json").stdout)
            return next((r["id"] for r in rows if r["status"] == "running"), None)

        session = wait_until(running, timeout=60, interval=0.2)
        followed = subprocess.Popen(
            [str(BUTLER), "logs", session, "-c", folder, "--follow"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        # The session waits (its cwd is the butler folder) until the follower is watching.
        assert followed.stderr.readline() == f"session {session}: running\n"
        (daemon.config_dir / "release").touch()
        out, err = followed.communicate(timeout=60)
        assert followed.returncode == 0, err
        assert "status    succeeded" in out
        assert "answer:\n  done slowly" in out
    finally:
        slow.communicate(timeout=60)


def test_an_unknown_session_and_a_stopped_daemon_are_one_line(daemon):
    folder = str(daemon.config_dir)
    unknown = butler("logs", "00000000-0000-0000-0000-000000000000", "-c", folder)
    assert unknown.returncode == 2
    assert unknown.stderr == (
        "butler: error: session 00000000-0000-0000-0000-000000000000 not found\n"
    )
    daemon.stop()
    down = butler("trigger", "-c", folder, "hello")
    assert down.returncode == 2
    assert down.stderr == (
        f"butler: error: butler 'shell' is not running at {daemon.url}/mcp; "
        f"start it with: butler run --config {daemon.config_dir}\n"
    )


def test_logs_follow_shows_each_tool_call_while_the_session_runs(
    roster, schema_name, pg_dsn, fake_model
):
    # The genuine Claude Code against the fake model: it calls state_set, then its
    # next turn hangs, so the session is still running when the call is shown.
    port = free_port()
    passed = '[butler.env]\noptional = ["ANTHROPIC_BASE_URL"]\n'  # as butler init writes it
    folder = write_butler(roster, "helper", port=port, schema=schema_name, extra=passed)
    env = {"ANTHROPIC_API_KEY": "sk-fake", "ANTHROPIC_BASE_URL": fake_model.url}
    fake_model.script = [ToolCall("state_set", {"key": "step", "value": "one"}), Hang()]
    run_env = {**{k: v for k, v in os.environ.items() if k != "DATABASE_URL"}, **env}
    with DaemonProcess(folder, port=port, database_url=pg_dsn, env=env):
        trigger = subprocess.Popen(
            [str(BUTLER), "trigger", "-c", str(folder), "Note the step"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=run_env, cwd=REPO,
        )  # fmt: skip
        try:

            def running() -> str | None:
                rows = json.loads(butler("sessions", "-c", str(folder), "--json").stdout)
                return next((r["id"] for r in rows if r["status"] == "running"), None)

            session = wait_until(running, timeout=120, interval=0.2)
            followed = subprocess.Popen(
                [str(BUTLER), "logs", session, "-c", str(folder), "--follow"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=run_env, cwd=REPO,
            )  # fmt: skip
            seen: list[str] = []
            reader = threading.Thread(target=lambda: seen.extend(followed.stderr), daemon=True)
            reader.start()
            wait_until(lambda: any("state_set" in line for line in seen), timeout=120)
            assert followed.poll() is None  # shown while the session still runs
            fake_model.reset()  # the hung turn is answered: the session ends
            out, _ = followed.communicate(timeout=120)
            reader.join(timeout=10)
            assert followed.returncode == 0, "".join(seen)
            assert "status    succeeded" in out
            assert 'state_set({"key": "step", "value": "one"})' in out
        finally:
            trigger.communicate(timeout=120)
