"""The suite's three tiers, and the order it runs them in: the fast ones first.

A test in tests/unit is of the unit tier (no database, no process); one marked
``slow`` or ``e2e`` of the slow tier; every other is marked ``integration``
here, so each tier is one ``-m`` (docs/testing.md).

Collected as they are, the slow tests of tests/builders and tests/channels come
early: a run shows 5 % done after a quarter of an hour, and a fast test that
fails is heard of last. Sorted here, the unit tier runs first, then the
integration tier, then the slow tier. Among the slow, a test that declares a
long ``timeout`` (the compose deployment, the package installs) starts first,
so it runs beside the many shorter ones and the run does not end on one worker
waiting for it while the other is idle. The sort is stable: within a tier the
collection's order stays, and a module's fixtures are set up once.

A pytest plugin (the top-level conftest lists it); ``-p no:tests.tiers`` runs
the collection's own order.
"""

from __future__ import annotations

import pytest

#: The unit tier's folder, relative to the repository.
UNIT = "tests/unit/"


def tier(item: pytest.Item) -> tuple[int, float]:
    """Where ``item`` goes: its tier (0 unit, 1 integration, 2 slow), then, within the
    slow tier, the longest declared timeout first."""
    if item.get_closest_marker("slow") or item.get_closest_marker("e2e"):
        timeout = item.get_closest_marker("timeout")
        declared = float(timeout.args[0]) if timeout and timeout.args else 0.0
        return 2, -declared
    return (0 if item.nodeid.startswith(UNIT) else 1), 0.0


@pytest.hookimpl(tryfirst=True)  # before -m deselects: it selects by the mark given here
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if tier(item)[0] == 1:
            item.add_marker(pytest.mark.integration)
    items.sort(key=tier)
