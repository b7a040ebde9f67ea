"""A session that finds a slot free is written as running at once: no separate UPDATE.

Each statement is a round trip to PostgreSQL and, on ``sessions``, a dead row
version (``updated_at`` is indexed, so no update of a row is HOT). A session
that must queue is written as pending, and marked running when its slot comes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FakeAdapter
from tests.helpers import eventually

pytestmark = pytest.mark.slow

MARK_RUNNING = "UPDATE sessions SET status = 'running'"


@pytest.fixture
def statements(db, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement the store sends through ``db.execute``, in order."""
    sent: list[str] = []
    execute = db.execute

    async def counted(query: str, *args: object) -> str:
        sent.append(query)
        return await execute(query, *args)

    monkeypatch.setattr(db, "execute", counted)
    yield sent


async def test_a_session_with_a_free_slot_is_inserted_running_and_never_marked_running(
    make_spawner, statements: list[str]
):
    spawner = make_spawner()
    result = await spawner.trigger(TriggerRequest("at once"))
    assert result.success, result.error
    assert not [q for q in statements if q.startswith(MARK_RUNNING)]
    inserts = [q for q in statements if q.startswith("INSERT INTO sessions")]
    assert len(inserts) == 1
    row = await spawner.sessions.get(result.session_id)
    assert row["status"] == "succeeded"
    assert row["started_at"] is not None and row["completed_at"] >= row["started_at"]


async def test_a_session_that_queues_is_pending_until_its_slot_comes(
    make_spawner, statements: list[str]
):
    adapter = FakeAdapter()
    adapter.release.clear()
    spawner = make_spawner(adapter)
    first = asyncio.create_task(spawner.trigger(TriggerRequest("first")))
    await adapter.started.wait()
    second = asyncio.create_task(spawner.trigger(TriggerRequest("second")))
    await eventually(lambda: spawner.waiting == 1)
    pending = await spawner.sessions.list(status="pending")
    assert [r["prompt"] for r in pending] == ["second"]
    assert [r["started_at"] for r in pending] == [None]
    adapter.release.set()
    results = await asyncio.gather(first, second)
    assert all(r.success for r in results)
    assert len([q for q in statements if q.startswith(MARK_RUNNING)]) == 1  # the second's
    assert (await spawner.sessions.get(results[1].session_id))["started_at"] is not None
