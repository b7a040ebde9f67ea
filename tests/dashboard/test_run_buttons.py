"""The dashboard's "run now" and "run again" buttons go through admission like any trigger.

In-process (the app on an ASGI transport, a real PostgreSQL): no daemon, no browser.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx2
import pytest

from butler.config import load_config
from butler.context import ButlerContext
from butler.daemon import assemble
from butler.dashboard.forms import form_token
from butler.server import build_app
from butler.store.db import Database
from butler.store.sessions import NewSession
from tests.helpers import TEST_TOKEN, eventually, free_port, write_butler
from tests.schedules import PARIS_DIGEST, RecordingAdapter

BASE = "http://butler"
#: What the dashboard's own forms send: its origin, its form token, the owner's token.
HEADERS = {
    "Origin": BASE,
    "Authorization": f"Bearer {TEST_TOKEN}",
    "Content-Type": "application/x-www-form-urlencoded",
}


@pytest.fixture
async def butler(roster: Path, db: Database) -> ButlerContext:
    RecordingAdapter.prompts = []
    runtime = {"type": "recording", "max_concurrent_sessions": 1, "max_queued_sessions": 0}
    folder = write_butler(
        roster, "tester", port=free_port(), schema=db.schema, runtime=runtime, extra=PARIS_DIGEST
    )
    return await assemble(load_config(folder), db)


async def post(butler: ButlerContext, path: str) -> httpx2.Response:
    transport = httpx2.ASGITransport(app=build_app(butler))
    async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
        return await client.post(path, content=f"csrf={form_token(TEST_TOKEN)}", headers=HEADERS)


async def test_run_now_refused_by_admission_answers_409_and_records_no_fire(butler, db):
    held = butler.spawner._admission.reserve()  # the only place is taken
    try:
        answer = await post(butler, "/schedules/digest/run")
    finally:
        held.release()
    assert answer.status_code == 409
    assert answer.text.startswith("schedule: queue full: 1 sessions running or queued")
    assert answer.text.count("\n") == 1
    listed = await butler.scheduler.listing()
    assert [s["last_fired"] for s in listed] == [None]
    assert await db.fetchval("SELECT count(*) FROM sessions") == 0


async def test_run_now_admitted_records_the_fire_and_redirects(butler, db):
    answer = await post(butler, "/schedules/digest/run")
    assert answer.status_code == 303 and answer.headers["location"] == "/schedules"
    listed = await butler.scheduler.listing()
    assert listed[0]["last_fired_via"] == "manual"
    await eventually(lambda: RecordingAdapter.prompts)
    await butler.spawner.drain()


async def session(butler: ButlerContext, source: str, parent: uuid.UUID | None = None) -> str:
    new = NewSession(
        prompt="Context line.\n\nDo the thing.",
        trigger_source=source,
        runtime="recording",
        parent_session_id=parent,
    )
    await butler.sessions.create(new)
    return str(new.id)


async def test_run_again_refuses_a_session_another_session_triggered(butler, db):
    parent = await session(butler, "external")
    child = await session(butler, "trigger", uuid.UUID(parent))
    answer = await post(butler, f"/sessions/{child}/run-again")
    assert answer.status_code == 409
    assert answer.text == (
        f"session: {child} was triggered by another session; "
        "expected a top-level trigger to run again\n"
    )
    assert await db.fetchval("SELECT count(*) FROM sessions") == 2


async def test_run_again_keeps_the_trigger_source_and_the_context(butler, db):
    original = await session(butler, "schedule:digest")
    answer = await post(butler, f"/sessions/{original}/run-again")
    assert answer.status_code == 303
    new_id = answer.headers["location"].removeprefix("/sessions/")
    row = await butler.sessions.get(new_id)
    assert row["trigger_source"] == "schedule:digest"
    assert row["prompt"] == "Context line.\n\nDo the thing."
    assert row["parent_session_id"] is None
    await butler.spawner.drain()
