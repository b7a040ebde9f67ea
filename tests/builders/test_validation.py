"""The flag rules of docs/builders.md and collision-safe ids, and the refusals a person sees.

The flag matrix is checked by the CLI before it contacts the daemon; names
that need the roster or the repository (protocols, specs, files) are checked
by the daemon. Either way: one line on stderr, exit status 2, nothing created.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from butler.builders import ids
from butler.builders.modes import NothingToSpawn, SpawnOptions, choose_mode
from butler.errors import UserError
from tests.builders.conftest import Builders
from tests.helpers import REPO

pytestmark = pytest.mark.slow

MATRIX = [
    (SpawnOptions(project="0009"), "spec"),
    (SpawnOptions(text="Fix bug"), "task"),
    (SpawnOptions(task="Fix bug"), "task"),
    (SpawnOptions(protocol="cleanup"), "protocol"),
    (SpawnOptions(shell=True), "shell"),
    (SpawnOptions(project="0009", text="Fix"), "Cannot combine --project with task text"),
    (SpawnOptions(project="0009", shell=True), "Flags are mutually exclusive"),
    (SpawnOptions(protocol="x", shell=True), "Flags are mutually exclusive"),
    (SpawnOptions(text="Fix", protocol="x"), "Cannot combine task text with --protocol"),
    (SpawnOptions(files=("a.ts",)), "--files requires a task"),
    (SpawnOptions(protocol="x", files=("a.ts",)), "--files requires a task"),
    (SpawnOptions(text="Fix", args={"a": 1}), "--args requires --protocol"),
    (SpawnOptions(text="Fix", role="r.md"), "--role requires --shell"),
    (SpawnOptions(text="a", task="b"), "Cannot combine task text with --task"),
    (SpawnOptions(text="  "), "task text is empty"),
]


@pytest.mark.parametrize(("options", "expected"), MATRIX)
def test_validation_matrix(options: SpawnOptions, expected: str):
    if expected in ("spec", "task", "protocol", "shell"):
        assert choose_mode(options) == expected
        return
    with pytest.raises(UserError) as caught:
        choose_mode(options)
    assert str(caught.value).startswith(expected)


def test_nothing_given_is_an_error():
    with pytest.raises(NothingToSpawn, match="Nothing to spawn"):
        choose_mode(SpawnOptions())


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


def assert_nothing_created(builders: Builders) -> None:
    assert not (builders.repo / ".builders").exists()
    assert builders.git("branch", "--list", "builder/*") == ""
    assert builders.cli("builders", "list", "--json").stdout.strip() == "[]"


# -- ids ---------------------------------------------------------------------------------


def test_task_ids_stay_unique_over_1000_spawns_of_one_task():
    taken: set[str] = set()
    for _ in range(1000):
        builder_id = ids.task_id("Fix the authentication bug", taken)
        assert builder_id not in taken
        assert re.fullmatch(r"task-[0-9a-f]{4}-[a-z0-9]{4}", builder_id)
        taken.add(builder_id)
    assert len(taken) == 1000


def test_shell_ids_stay_unique_within_one_second():
    taken: set[str] = set()
    for _ in range(1000):
        taken.add(ids.shell_id(1733250000, taken))
    assert len(taken) == 1000
    assert all(re.fullmatch(r"shell-1733250000-[a-z0-9]{4}", i) for i in taken)


def test_a_drawn_id_already_taken_is_drawn_again():
    draws = iter(["x9k2", "x9k2", "b4c1"])
    first = ids.task_id("Fix bug", set(), lambda: next(draws))
    second = ids.task_id("Fix bug", {first}, lambda: next(draws))
    assert first.endswith("-x9k2") and second.endswith("-b4c1")


def test_two_protocol_spawns_in_one_second_get_two_ids():
    first = ids.protocol_id("cleanup", 1733250000)
    second = ids.protocol_id("cleanup", 1733250000, {first})
    assert (first, second) == ("protocol-cleanup-1733250000", "protocol-cleanup-1733250001")


def test_branch_names():
    assert ids.branch_name("task-a7f3-x9k2") == "builder/task-a7f3-x9k2"
    assert ids.branch_name("0009", "0009-terminal-click") == "builder/0009-terminal-click"
