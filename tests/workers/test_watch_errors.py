"""A worker watches a running session's row to end its runtime once the row closes; a look
that fails (a database refusing connections) must never end a healthy session."""

from __future__ import annotations

import asyncio

import asyncpg

from butler.workers import handback


class _RefusingJobs:
    """The session jobs of a database that answers every look with an error."""

    def __init__(self) -> None:
        self.looks = 0

    async def open(self, session_id: str) -> bool:
        self.looks += 1
        raise asyncpg.TooManyConnectionsError("sorry, too many clients already")


async def test_a_session_whose_row_cannot_be_looked_at_runs_to_its_result(monkeypatch):
    monkeypatch.setattr(handback, "WATCH_S", 0.05)
    jobs = _RefusingJobs()

    async def run() -> dict:
        await asyncio.sleep(0.5)  # the runtime, while the watcher's looks fail
        return {"status": "succeeded"}

    result = await handback._unless_closed(run(), jobs, "a-session")  # type: ignore[arg-type]
    assert jobs.looks >= 3
    assert result == {"status": "succeeded"}
