"""A cancelled session says who cancelled it."""

from __future__ import annotations

import asyncio

import pytest

from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FakeAdapter
from tests.helpers import eventually

pytestmark = pytest.mark.slow


async def test_a_session_cancelled_by_its_client_is_recorded_so(make_spawner):
    adapter = FakeAdapter()
    adapter.release.clear()
    spawner = make_spawner(adapter)
    caller = asyncio.create_task(spawner.trigger(TriggerRequest("child", trigger_source="route")))
    await adapter.started.wait()
    caller.cancel()  # the client went away: its request handler is cancelled
    with pytest.raises(asyncio.CancelledError):
        await caller
    rows = await eventually(lambda: spawner.sessions.list(status="cancelled"), timeout=10)
    assert rows[0]["error"] == "cancelled by its client"


async def test_a_session_cancelled_by_the_drain_says_the_butler_is_shutting_down(make_spawner):
    adapter = FakeAdapter()
    adapter.release.clear()
    spawner = make_spawner(adapter)
    caller = asyncio.create_task(spawner.trigger(TriggerRequest("long")))
    await adapter.started.wait()
    assert await spawner.drain(0) == 1
    assert (await caller).error == "cancelled: the butler is shutting down"
    [row] = await spawner.sessions.list(status="cancelled")
    assert row["error"] == "cancelled: the butler is shutting down"
