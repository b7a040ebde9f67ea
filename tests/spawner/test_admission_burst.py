"""Admission under simultaneous triggers: the queue bound holds, nothing accepted is lost."""

from __future__ import annotations

import asyncio

import pytest

from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FakeAdapter
from tests.helpers import eventually

pytestmark = pytest.mark.slow


async def _burst(spawner, count: int) -> list[asyncio.Task]:
    return [
        asyncio.create_task(spawner.trigger(TriggerRequest(f"burst {n}"))) for n in range(count)
    ]


async def test_simultaneous_triggers_beyond_the_queue_are_refused_at_once(make_spawner):
    adapter = FakeAdapter()
    adapter.release.clear()
    spawner = make_spawner(
        adapter, runtime={"max_concurrent_sessions": 1, "max_queued_sessions": 1}
    )
    tasks = await _burst(spawner, 10)
    # refused at once: while the one running session is still held
    await eventually(lambda: sum(t.done() for t in tasks) == 8, timeout=20)
    refused = [t.result() for t in tasks if t.done()]
    assert all(r.success is False for r in refused)
    assert {r.error for r in refused} == {
        "queue full: 2 sessions running or queued "
        "(max_concurrent_sessions=1, max_queued_sessions=1)"
    }
    adapter.release.set()
    accepted = [r for r in await asyncio.gather(*tasks) if r.success]
    assert len(accepted) == 2


async def test_a_burst_of_1000_refuses_the_excess_and_loses_nothing(make_spawner):
    adapter = FakeAdapter()
    adapter.release.clear()
    spawner = make_spawner(adapter, runtime={"max_queued_sessions": 100})
    tasks = await _burst(spawner, 1000)
    await eventually(lambda: sum(t.done() for t in tasks) == 1000 - 101, timeout=60)
    assert spawner.in_flight == 101
    adapter.release.set()
    results = await asyncio.gather(*tasks)
    accepted = [r for r in results if r.session_id]
    assert len(accepted) == 101 and all(r.success for r in accepted)
    rows = await spawner.sessions.list(limit=2000)
    assert len(rows) == 101 and {r["status"] for r in rows} == {"succeeded"}
    assert {r["id"] for r in rows} == {r.session_id for r in accepted}
