"""The refusals a person sees for the flag rules of docs/builders.md.

The flag matrix (tests/unit/builders/test_modes.py) is checked by the CLI before
it contacts the daemon; names that need the roster or the repository (protocols,
specs, files) are checked by the daemon. Either way: one line on stderr, exit
status 2, nothing created.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.builders.conftest import Builders
from tests.helpers import REPO

pytestmark = pytest.mark.slow


@pytest.fixture
def builders(builders_that_spawn_nothing: Builders) -> Builders:
    """Every daemon test here is a refusal: they share one daemon."""
    return builders_that_spawn_nothing


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "butler.cli",
        "builders",
        "spawn",
        "-c",
        str(REPO / "roster/general"),
        *args,
    ]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "0009", "Fix bug"], "Cannot combine --project with task text"),
        (["--protocol", "cleanup", "--shell"], "Flags are mutually exclusive"),
        (["--files", "README.md"], "--files requires a task"),
    ],
)
def test_the_cli_refuses_in_one_line_without_a_daemon(args: list[str], message: str):
    done = cli(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"butler: error: {message}")
    assert len(done.stderr.splitlines()) == 1


def test_nothing_given_prints_the_help_and_the_error():
    done = cli()
    assert done.returncode == 2
    assert "--protocol" in done.stdout and "--shell" in done.stdout  # the help, every mode
    assert done.stderr.startswith("butler: error: Nothing to spawn")


def test_help_shows_every_mode_with_an_example():
    done = subprocess.run(
        [sys.executable, "-m", "butler.cli", "builders", "spawn", "--help"],
        capture_output=True, text=True, check=False, env={"COLUMNS": "200", "PATH": "/usr/bin"},
    )  # fmt: skip
    assert done.returncode == 0
    text = done.stdout
    for example in (
        'butler builders spawn -c roster/general "Fix the bug in auth.py"',
        'butler builders spawn -c roster/general --task "Refactor the logging" --files',
        "butler builders spawn -c roster/general --protocol cleanup",
        "butler builders spawn -c roster/general --protocol experiment --args",
        "butler builders spawn -c roster/general --project 0009",
        "butler builders spawn -c roster/general --shell --role reviewer",
    ):
        assert example in text, example


def test_9_project_with_shell_is_refused_and_creates_nothing(builders: Builders):
    done = builders.cli("builders", "spawn", "-p", "0009", "--shell")
    assert done.returncode == 2
    assert done.stderr == (
        "butler: error: Flags are mutually exclusive: --project and --shell; choose one mode\n"
    )
    assert_nothing_created(builders)


def test_10_protocol_with_task_text_is_refused(builders: Builders):
    done = builders.cli("builders", "spawn", "--protocol", "x", "task text")
    assert done.returncode == 2
    assert done.stderr == "butler: error: Cannot combine task text with --protocol\n"
    assert_nothing_created(builders)


def test_13_a_missing_protocol_lists_the_available_ones(builders: Builders):
    done = builders.cli("builders", "spawn", "--protocol", "nonexistent")
    assert done.returncode == 2
    assert done.stderr == (
        "butler: error: unknown protocol 'nonexistent'; available protocols: cleanup, experiment\n"
    )
    assert_nothing_created(builders)


def test_names_that_could_leave_the_roster_are_refused(builders: Builders):
    done = builders.cli("builders", "spawn", "--protocol", "../../etc")
    assert done.returncode == 2 and "expected letters, digits" in done.stderr
    done = builders.cli("builders", "spawn", "-p", "../0009")
    assert done.returncode == 2 and "expected letters, digits" in done.stderr
    assert_nothing_created(builders)


def test_an_unknown_spec_lists_the_specs(builders: Builders):
    done = builders.cli("builders", "spawn", "-p", "0042")
    assert done.returncode == 2
    assert "no spec specs/0042-*.md" in done.stderr
    assert "available specs: 0009-terminal-click, 0010-no-plan" in done.stderr


def test_3b_a_missing_context_file_is_named(builders: Builders):
    done = builders.cli("builders", "spawn", "Fix bug", "--files", "src/auth.ts,src/nope.ts")
    assert done.returncode == 2
    assert done.stderr == "butler: error: --files: src/nope.ts not found\n"
    assert not (builders.repo / ".builders").exists()


def test_6b_protocol_arguments_must_be_a_json_object(builders: Builders):
    done = builders.cli("builders", "spawn", "--protocol", "experiment", "--args", '["a"]')
    assert done.returncode == 2 and "--args: expected a JSON object" in done.stderr
    done = builders.cli("builders", "spawn", "--protocol", "experiment", "--args", "{hypothesis}")
    assert done.returncode == 2 and "--args: invalid JSON" in done.stderr
    assert len(done.stderr.splitlines()) == 1


def assert_nothing_created(builders: Builders) -> None:
    assert not (builders.repo / ".builders").exists()
    assert builders.git("branch", "--list", "builder/*") == ""
    assert builders.cli("builders", "list", "--json").stdout.strip() == "[]"
