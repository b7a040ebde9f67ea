"""The command line's conventions as a person meets them: help text, option placement, refusals."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, free_port, write_butler

pytestmark = pytest.mark.slow

BUTLER = Path(sys.executable).with_name("butler")


def butler(*args: str, stdin: str = "", env: dict[str, str] | None = None):
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BUTLER_CONFIG")}
    return subprocess.run(
        [str(BUTLER), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env={**clean, "COLUMNS": "200", **(env or {})},
        cwd=REPO,
        timeout=60,
    )


def test_help_keeps_square_brackets_and_shows_no_placeholder_on_flags():
    added = butler("sources", "add", "--help")
    assert "Add a source to [sources] in config.toml" in added.stdout
    spawn = butler("spawn", "--help")
    assert "--headless" in spawn.stdout
    assert "<bool>" not in spawn.stdout
    assert "<str>" in spawn.stdout  # options that take a value still say what kind


def test_adapter_options_go_after_the_sub_command_too_and_not_running_is_plain(roster):
    folder = write_butler(roster, "idle", port=free_port())
    done = butler("adapter", "check_status", "9e0f2a57", "-c", str(folder))
    assert done.returncode == 2
    url = f"http://127.0.0.1:{folder_port(folder)}/mcp"
    assert done.stderr == (
        f"butler: error: butler 'idle' is not running at {url}; "
        f"start it with: butler run --config {folder}\n"
    )


def folder_port(folder: Path) -> int:
    for line in (folder / "butler.toml").read_text().splitlines():
        if line.startswith("port"):
            return int(line.split("=")[1])
    raise AssertionError("no port in butler.toml")


def test_list_tells_another_program_from_down_and_survives_a_bad_folder(roster):
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        write_butler(roster, "alpha", port=silent.getsockname()[1])
        write_butler(roster, "beta", port=free_port())
        broken = write_butler(roster, "gamma", port=free_port())
        (broken / "butler.toml").write_text("[butler\n")
        listed = butler("list", "--roster", str(roster))
    rows = {r[0]: r for r in table_rows(listed.stdout)}
    assert rows["alpha"][-2] == "other"
    assert rows["beta"][-2] == "down"
    assert rows["gamma"][-2] == "invalid"
    assert listed.returncode == 2
    assert listed.stderr.startswith(f"butler: error: {broken}/butler.toml: invalid TOML at line 1")


def table_rows(text: str) -> list[list[str]]:
    """The body rows of a rich table."""
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in text.splitlines()]
    return [row for row in rows if row]


def test_credentials_are_set_from_stdin_listed_by_name_and_deleted(roster, schema_name, pg_dsn):
    folder = write_butler(roster, "keeper", port=free_port(), schema=schema_name)
    env = {"DATABASE_URL": pg_dsn}
    secret = "sk-test-0123456789"
    done = butler("credentials", "set", "ANTHROPIC_API_KEY", "-c", str(folder), stdin=secret + "\n",
                  env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "set ANTHROPIC_API_KEY for keeper\n"
    listed = butler("credentials", "list", "-c", str(folder), env=env)
    assert [row[0] for row in table_rows(listed.stdout)] == ["ANTHROPIC_API_KEY"]
    assert secret not in listed.stdout + listed.stderr

    on_argv = butler("credentials", "set", "ANTHROPIC_API_KEY", secret, "-c", str(folder), env=env)
    assert on_argv.returncode == 2  # a value on the command line is refused, not stored

    assert butler("credentials", "delete", "ANTHROPIC_API_KEY", "-c", str(folder), env=env).stdout
    gone = butler("credentials", "delete", "ANTHROPIC_API_KEY", "-c", str(folder), env=env)
    assert gone.returncode == 2
    assert gone.stderr == (
        "butler: error: ANTHROPIC_API_KEY: no such credential for keeper; "
        "see butler credentials list\n"
    )
    bad = butler("credentials", "set", "NOT-A-NAME", "-c", str(folder), stdin="x", env=env)
    assert bad.returncode == 2 and "NOT-A-NAME" in bad.stderr


def test_options_read_without_pydantic_still_refuse_a_bad_value_in_typer_s_words(roster):
    folder = write_butler(roster, "keeper", port=free_port())
    word = butler("sessions", "-c", str(folder), "--limit", "many")
    assert word.returncode == 2
    assert "Invalid value for '--limit': Input should be a valid integer" in word.stderr
    port = butler("dashboard", "--roster", str(roster), "--port", "70000")
    assert port.returncode == 2
    assert "Invalid value for '--port': Input should be less than or equal to 65535" in port.stderr
    # A plain value goes through (the daemon is down: that is the next thing said).
    plain = butler("sessions", "-c", str(folder), "--limit", "5")
    assert plain.stderr.startswith("butler: error: butler 'keeper' is not running at")
