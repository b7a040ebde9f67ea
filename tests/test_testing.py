"""MockSpawner, the test double butler ships for its users' tests."""

from __future__ import annotations

import pytest

from butler.spawner.result import SpawnerResult
from butler.spawner.spawner import TriggerRequest
from butler.testing import MockSpawner


async def test_records_invocations_and_matches_canned_responses():
    mock = MockSpawner()
    mock.add_response("health", SpawnerResult(output="all good", tool_calls=[{"name": "x"}]))
    default = await mock.trigger(TriggerRequest("Check tasks"))
    canned = await mock.trigger(TriggerRequest("Check health data", context="ctx"))
    assert mock.invocations[0].prompt == "Check tasks"
    assert mock.invocations[1].context == "ctx"
    assert canned.output == "all good" and canned.tool_calls == [{"name": "x"}]
    assert default == SpawnerResult(success=True, output="", tool_calls=[], error=None)


async def test_assert_triggered_counts_exactly():
    mock = MockSpawner()
    for _ in range(3):
        await mock.trigger(TriggerRequest("p"))
    mock.assert_triggered(times=3)
    with pytest.raises(AssertionError):
        mock.assert_triggered(times=2)


async def test_assert_prompted_with_substring():
    mock = MockSpawner()
    await mock.trigger(TriggerRequest("Review contacts for birthdays"))
    mock.assert_prompted_with("birthdays")
    with pytest.raises(AssertionError):
        mock.assert_prompted_with("medications")
