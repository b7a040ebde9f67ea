"""The flag rules of docs/builders.md: which mode a spawn's flags choose, or why none.

Pure logic (butler/builders/modes.py); the refusals as a person sees them, from the
CLI and the daemon, are in tests/builders/test_validation.py.
"""

from __future__ import annotations

import pytest

from butler.builders.modes import NothingToSpawn, SpawnOptions, choose_mode
from butler.errors import UserError

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
