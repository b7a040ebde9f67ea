"""Schedules against a real PostgreSQL, a real spawner and a clock the test moves."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from butler.config import ButlerConfig, load_config
from butler.context import ButlerContext
from butler.daemon import assemble
from butler.runtimes.registry import register
from butler.scheduler import Scheduler, next_due
from butler.server import build_mcp
from butler.store.db import Database
from butler.store.schedules import ScheduleStore
from butler.store.sessions import SessionStore
from tests.fakes.clock import ManualClock
from tests.helpers import eventually, free_port, write_butler
from tests.schedules import PARIS_DIGEST, RecordingAdapter

T = TypeVar("T")


WEEKLY = """
[[butler.schedule]]
name = "weekly"
cron = "0 9 * * 1"
prompt = "Plan the week."
"""


register("recording", f"{__name__}:RecordingAdapter")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def config(roster: Path, db: Database) -> ButlerConfig:
    RecordingAdapter.prompts = []
    folder = write_butler(
        roster,
        "tester",
        port=free_port(),
        schema=db.schema,
        runtime={"type": "recording"},
        extra=PARIS_DIGEST + WEEKLY,
    )
    return load_config(folder)


@pytest.fixture
async def butler(config: ButlerConfig, db: Database) -> ButlerContext:
    return await assemble(config, db)


def scheduler_of(butler: ButlerContext, clock: ManualClock) -> Scheduler:
    """A fresh scheduler over the butler's database: what a restarted daemon builds."""
    return Scheduler(butler.config.butler.schedule, ScheduleStore(butler.db), butler.spawner, clock)


async def schedule_sessions(db: Database, name: str = "digest") -> list[dict[str, Any]]:
    rows = await SessionStore(db).list(limit=50, trigger_source=f"schedule:{name}")
    return [r for r in rows if r["status"] == "succeeded"]


async def parked(clock: ManualClock, at: datetime) -> bool:
    return clock.wake_times == [at]


def test_next_due_reads_the_cron_in_the_schedules_timezone():
    winter = next_due("0 8 * * *", "Europe/Paris", utc(2026, 1, 15, 6, 0))
    summer = next_due("0 8 * * *", "Europe/Paris", utc(2026, 7, 15, 5, 0))
    assert winter == utc(2026, 1, 15, 7, 0)
    assert summer == utc(2026, 7, 15, 6, 0)
    assert next_due("0 8 * * *", "UTC", utc(2026, 1, 15, 8, 0)) == utc(2026, 1, 16, 8, 0)
    # The night clocks go forward, 02:30 does not exist in Paris; it fires at 03:00 local.
    assert next_due("30 2 * * *", "Europe/Paris", utc(2026, 3, 28, 12)) == utc(2026, 3, 29, 1)


async def test_fires_at_eight_paris_time_which_is_seven_utc_in_winter(butler, db):
    clock = ManualClock(utc(2026, 1, 15, 6, 30))
    scheduler = scheduler_of(butler, clock)
    await scheduler.start()
    try:
        await eventually(lambda: parked(clock, utc(2026, 1, 15, 7, 0)))
        clock.set(utc(2026, 1, 15, 6, 59, 59))
        assert await scheduler.tick() == []
        clock.set(utc(2026, 1, 15, 7, 0))
        sessions = await eventually(lambda: schedule_sessions(db))
        assert [s["trigger_source"] for s in sessions] == ["schedule:digest"]
        assert RecordingAdapter.prompts == ["Write the morning digest."]
        await eventually(lambda: parked(clock, utc(2026, 1, 16, 7, 0)))
    finally:
        await scheduler.stop()


async def test_a_restarted_scheduler_does_not_fire_the_same_slot_again(butler, db):
    clock = ManualClock(utc(2026, 1, 15, 6, 30))
    first = scheduler_of(butler, clock)
    await first.start()
    clock.set(utc(2026, 1, 15, 7, 0, 5))
    await eventually(lambda: schedule_sessions(db))
    await first.stop()

    clock.set(utc(2026, 1, 15, 7, 1))
    second = scheduler_of(butler, clock)
    await second.start()
    try:
        await eventually(lambda: parked(clock, utc(2026, 1, 16, 7, 0)))
        assert len(await schedule_sessions(db)) == 1
        assert RecordingAdapter.prompts == ["Write the morning digest."]
    finally:
        await second.stop()


async def test_slots_missed_while_down_fire_once_at_start_up(butler, db):
    clock = ManualClock(utc(2026, 1, 15, 6, 30))
    first = scheduler_of(butler, clock)
    await first.start()
    await first.stop()

    # Down for three mornings (and a Monday 09:00): each schedule fires once.
    clock.set(utc(2026, 1, 19, 12, 0))
    second = scheduler_of(butler, clock)
    await second.start()
    try:
        await eventually(lambda: schedule_sessions(db))
        await eventually(lambda: schedule_sessions(db, "weekly"))
        await eventually(lambda: parked(clock, utc(2026, 1, 20, 7, 0)))
        assert len(await schedule_sessions(db)) == 1
        assert len(await schedule_sessions(db, "weekly")) == 1
        assert sorted(RecordingAdapter.prompts) == ["Plan the week.", "Write the morning digest."]
    finally:
        await second.stop()


async def test_a_new_or_changed_schedule_does_not_fire_for_the_past(butler, db, config):
    clock = ManualClock(utc(2026, 1, 15, 12, 0))
    assert await scheduler_of(butler, clock).tick() == []
    earlier = config.butler.schedule[0].model_copy(update={"cron": "0 7 * * *"})
    clock.set(utc(2026, 1, 16, 9, 0))
    changed = Scheduler([earlier], ScheduleStore(db), butler.spawner, clock)
    listing = await changed.listing()
    assert listing[0]["next_due"] == utc(2026, 1, 17, 6, 0).isoformat()
    assert await changed.tick() == []


async def test_a_slot_fires_once_when_two_callers_race_for_it(butler, db):
    clock = ManualClock(utc(2026, 1, 15, 6, 30))
    one, two = scheduler_of(butler, clock), scheduler_of(butler, clock)
    await one.tick()
    clock.set(utc(2026, 1, 15, 7, 0))
    results = await asyncio.gather(one.tick(), two.tick(), one.tick(via="clock"))
    assert [f.name for fired in results for f in fired] == ["digest"]
    await eventually(lambda: schedule_sessions(db))
    assert RecordingAdapter.prompts == ["Write the morning digest."]


async def test_a_draining_butler_leaves_due_slots_for_the_next_start(butler, db):
    clock = ManualClock(utc(2026, 1, 15, 6, 30))
    scheduler = scheduler_of(butler, clock)
    await scheduler.tick()
    clock.set(utc(2026, 1, 15, 7, 0))
    butler.spawner.stop_accepting()
    assert await scheduler.tick() == []
    restarted = await assemble(butler.config, db)
    fired = await scheduler_of(restarted, clock).tick()
    assert [f.name for f in fired] == ["digest"]


async def test_schedule_tools_list_run_and_tick(butler, db):
    clock = ManualClock(utc(2026, 1, 15, 6, 30))
    butler.scheduler = scheduler_of(butler, clock)
    async with Client(build_mcp(butler)) as client:
        listed = (await client.call_tool("schedule_list", {})).structured_content["result"]
        digest = next(s for s in listed if s["name"] == "digest")
        assert digest["cron"] == "0 8 * * *"
        assert digest["timezone"] == "Europe/Paris"
        assert digest["prompt"] == "Write the morning digest."
        assert digest["last_fired"] is None
        assert digest["next_due"] == utc(2026, 1, 15, 7, 0).isoformat()

        with pytest.raises(ToolError, match="no schedule named 'nope'; this butler has: digest, "):
            await client.call_tool("schedule_run", {"name": "nope"})

        ran = (await client.call_tool("schedule_run", {"name": "weekly", "wait": True})).data
        assert ran["trigger_source"] == "schedule:weekly"
        assert ran["result"]["success"] is True
        assert ran["result"]["output"] == "done: Plan the week."

        assert (await client.call_tool("tick", {})).data == {"fired": []}
        clock.set(utc(2026, 1, 15, 7, 0, 1))
        ticked = (await client.call_tool("tick", {})).data["fired"]
        assert [(f["name"], f["via"]) for f in ticked] == [("digest", "tick")]

        await eventually(lambda: schedule_sessions(db))
        listed = (await client.call_tool("schedule_list", {})).structured_content["result"]
        digest = next(s for s in listed if s["name"] == "digest")
        assert digest["last_fired"] == utc(2026, 1, 15, 7, 0, 1).isoformat()
        assert digest["last_fired_via"] == "tick"
        assert digest["next_due"] == utc(2026, 1, 16, 7, 0).isoformat()
    sessions = await SessionStore(db).list(limit=10)
    assert sorted(s["trigger_source"] for s in sessions) == ["schedule:digest", "schedule:weekly"]
