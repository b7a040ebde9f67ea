"""Builder ids and branch names stay unique and well formed (butler/builders/ids.py)."""

from __future__ import annotations

import re

from butler.builders import ids


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
