"""A butler's folder: what loads, what overrides it, and every mistake as one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CONFIG_OVERRIDES, REPO, butler_toml

pytestmark = pytest.mark.slow

BUILT_IN_RUNTIMES = ("claude-code", "codex", "command", "copilot", "gemini", "opencode")


def run_butler(folder: Path | str, *args: str, env: dict[str, str] | None = None):
    """``butler run --config folder`` as a person would type it; it must not get far."""
    clean = {k: v for k, v in os.environ.items() if k not in CONFIG_OVERRIDES}
    argv = [sys.executable, "-m", "butler.cli", "run", "--config", str(folder), *args]
    return subprocess.run(
        argv, capture_output=True, text=True, env={**clean, **(env or {})}, cwd=REPO, timeout=60
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a refused start (exit 2, no traceback)."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    return lines[0]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(
            '[butler]\nname = "tester"\nprot = 8100\n',
            ["unknown key 'prot'", "[butler]", "expected one of: name, port,"],
            id="unknown-key",
        ),
        pytest.param(
            '[butler]\nname = "tester"\n[butler.runtime]\nmax_turn = 5\n',
            ["unknown key 'max_turn'", "[butler.runtime]", "max_turns"],
            id="unknown-key-in-a-sub-table",
        ),
        pytest.param(
            '[butler]\nname = "tester"\nport = "8100"\n',
            ["butler.port", "expected an integer", "found '8100' (a string)"],
            id="wrong-type",
        ),
        pytest.param(
            '[butler]\nname = "tester"\n[butler.runtime]\nmax_turns = true\n',
            ["butler.runtime.max_turns", "expected an integer", "found true (a boolean)"],
            id="boolean-for-a-number",
        ),
        pytest.param(
            "[butler]\nport = 8100\n",
            ["[butler]", "missing required key 'name'"],
            id="missing-name",
        ),
        pytest.param(
            '[butler]\nname = "tester"\nport = 81 00\n',
            ["invalid TOML at line 3, column 11"],
            id="unparsable-toml",
        ),
        pytest.param(
            '[butler]\nname = "tester"\ndescription = "never closed\n',
            ["invalid TOML at line 3, column"],
            id="unterminated-string",
        ),
        pytest.param(
            '[butler]\nname = "tester"\n\n[[butler.schedule]]\nname = "digest"\n'
            'cron = "0 25 * * *"\nprompt = "Summarise the day."\n',
            ["butler.schedule[0].cron", "expected a cron expression", "found '0 25 * * *'"],
            id="bad-cron",
        ),
        pytest.param(
            '[butler]\nname = "tester"\n[butler.runtime]\ntype = "clippy"\n',
            # The built-in ones: a test module may register more in this process, not in the CLI's.
            ["butler.runtime.type", "unknown runtime 'clippy'", *BUILT_IN_RUNTIMES],
            id="unknown-runtime",
        ),
        pytest.param(
            '[butler]\nname = "tester"\nport = 70000\n',
            ["butler.port", "expected a port number from 1 to 65535", "found 70000"],
            id="port-out-of-range",
        ),
        pytest.param(
            '[butler]\nname = "tester"\n[butler.db]\nurl = "mysql://me:hunter2@db/butler"\n',
            ["butler.db.url", "expected a URL like postgresql://", "mysql://me:***@db/butler"],
            id="not-a-postgresql-url",
        ),
        pytest.param(
            '[butler]\nname = "tester"\n[butler.runtime]\ntimeout_s = inf\n',
            ["butler.runtime.timeout_s", "expected a finite number", "found inf (a float)"],
            id="infinite-timeout",
        ),
        pytest.param(
            '[butler]\nname = "tester"\nshutdown_timeout_s = nan\n',
            ["butler.shutdown_timeout_s", "expected a finite number", "found nan"],
            id="nan-shutdown-timeout",
        ),
        pytest.param(
            '[butler]\nname = "tester"\n'
            + '\n[[butler.schedule]]\nname = "digest"\ncron = "0 8 * * *"\nprompt = "a"\n' * 2,
            ["butler.schedule", "two [[butler.schedule]] entries are named 'digest'"],
            id="duplicate-schedule-names",
        ),
        pytest.param(
            '[butler]\nname = "tester"\n'
            '\n[[butler.schedule]]\nname = "digest"\ncron = "0 8 * * *"\nprompt = "  "\n',
            ["butler.schedule[0].prompt", "expected a non-blank prompt", "found '  '"],
            id="blank-schedule-prompt",
        ),
    ],
)
def test_a_mistake_in_butler_toml_is_one_line_naming_file_key_and_expectation(
    roster, body, expected
):
    folder = butler_toml(roster, body)
    line = one_line_error(run_butler(folder))
    assert line.startswith(f"butler: error: {folder / 'butler.toml'}: ")
    for fragment in expected:
        assert fragment in line
    assert "hunter2" not in line


def test_missing_claude_md_is_named(roster):
    folder = butler_toml(roster, '[butler]\nname = "tester"\n')
    (folder / "CLAUDE.md").unlink()
    line = one_line_error(run_butler(folder))
    assert line == f"butler: error: {folder}: missing CLAUDE.md (the butler's system prompt)"


def test_a_codex_butler_without_its_prompt_file_names_both_it_reads(roster):
    folder = butler_toml(roster, '[butler]\nname = "tester"\n[butler.runtime]\ntype = "codex"\n')
    (folder / "CLAUDE.md").unlink()
    line = one_line_error(run_butler(folder))
    assert line == (
        f"butler: error: {folder}: missing AGENTS.md or CLAUDE.md (the butler's system prompt)"
    )


def test_a_config_folder_that_does_not_exist_is_named(tmp_path):
    line = one_line_error(run_butler(tmp_path / "nowhere"))
    assert str(tmp_path / "nowhere") in line
    assert "no such folder; expected a butler folder holding butler.toml" in line


def test_a_bad_override_blames_the_variable_or_option_not_the_file(roster):
    folder = butler_toml(roster, '[butler]\nname = "tester"\nport = 8100\n')
    line = one_line_error(run_butler(folder, env={"BUTLER_PORT": "99999"}))
    assert "environment variable BUTLER_PORT (butler.port)" in line
    assert "found 99999" in line
    line = one_line_error(run_butler(folder, env={"BUTLER_PORT": "eighty"}))
    assert line.endswith(
        "environment variable BUTLER_PORT: expected an integer, found 'eighty' (a string)"
    )
    line = one_line_error(run_butler(folder, "--port", "0"))
    assert "--port (butler.port): expected a port number from 1 to 65535, found 0" in line
