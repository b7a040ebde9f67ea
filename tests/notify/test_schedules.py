"""A schedule fires, its session ends, and the person gets the answer; every attempt recorded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from butler.context import ButlerContext
from butler.notify import Notifier
from butler.runtimes.base import Invocation, RuntimeFailure, RuntimeResult
from butler.scheduler import Scheduler
from butler.store.credentials import CredentialStore
from butler.store.deliveries import DeliveryStore
from butler.store.schedules import ScheduleStore
from butler.store.sessions import SessionStore
from tests.fakes.clock import ManualClock
from tests.helpers import eventually
from tests.notify.conftest import deliveries, notify_table, schedule_table
from tests.servers.mail import MailServer
from tests.servers.mqtt import Subscriber
from tests.servers.synapse import Synapse
from tests.servers.webhook import Webhook

pytestmark = pytest.mark.slow

EIGHT = datetime(2026, 1, 15, 8, 0, tzinfo=UTC)


def scheduler_for(butler: ButlerContext, clock: ManualClock, notifier: Notifier) -> Scheduler:
    schedules = butler.config.butler.schedule
    return Scheduler(schedules, ScheduleStore(butler.db), butler.spawner, clock, notifier)


async def fire_at_eight(butler: ButlerContext, notifier: Notifier, clock: ManualClock) -> str:
    """Start the scheduler before 08:00, move the clock to 08:00; the session's id."""
    scheduler = scheduler_for(butler, clock, notifier)
    await notifier.start()
    await scheduler.start()
    butler.scheduler = scheduler
    await eventually(lambda: EIGHT in clock.wake_times)
    clock.set(EIGHT)

    async def ended() -> list[dict[str, Any]]:
        rows = await SessionStore(butler.db).list(limit=5, trigger_source="schedule:digest")
        return [r for r in rows if r["status"] in ("succeeded", "failed")]

    (row,) = await eventually(ended)
    return row["id"]


async def stop(butler: ButlerContext, notifier: Notifier) -> None:
    if butler.scheduler is not None:
        await butler.scheduler.stop()
    await notifier.stop()


async def test_the_person_gets_the_answer_by_mail_mqtt_and_matrix_and_a_long_one_is_cut(
    make_butler, scripted, mail_server: MailServer, mqtt_subscriber: Subscriber, synapse: Synapse
):
    person, bot = synapse.register("person"), synapse.register("butler")
    alias = f"digest{bot.name}"
    room = synapse.create_room(person, alias)
    synapse.join(bot, room)  # the bot is in the room before anything is sent there
    channels = {
        "mail": mail_server.url("butler@example.test", "person@example.test"),
        "broker": mqtt_subscriber.url(),
        "matrix": f"matrix://{bot.name}:{{MATRIX_PASSWORD}}@127.0.0.1:{synapse.port}/#{alias}",
    }
    extra = notify_table(channels, max_chars=400) + schedule_table("digest", "Write the digest.")
    butler = await make_butler(extra, public_url="https://butler.example.net")
    await CredentialStore(butler.db).set("MATRIX_PASSWORD", bot.password)
    answer = "Digest: " + "all well today. " * 100

    async def digest(invocation: Invocation) -> RuntimeResult:
        return RuntimeResult(output=answer)

    scripted.script = digest
    clock = ManualClock(EIGHT - timedelta(minutes=1))
    try:
        session_id = await fire_at_eight(butler, butler.notifier, clock)
        (mail,) = await mail_server.until(1)
        (payload,) = await mqtt_subscriber.until(1)

        def in_room() -> list[dict[str, Any]]:
            return [m for m in synapse.messages(person, room) if m["sender"] == bot.user_id]

        (matrix,) = await eventually(in_room)

        async def all_delivered() -> list[dict[str, Any]]:
            rows = await deliveries(butler.db, session_id)
            return rows if [r["status"] for r in rows] == ["delivered"] * 3 else []

        rows = await eventually(all_delivered)
    finally:
        await stop(butler, butler.notifier)
    link = f"https://butler.example.net/sessions/{session_id}"
    assert mail.subject == "tester: digest"
    assert mail.body.startswith("Digest: all well today.")
    assert mail.body.rstrip().endswith(f"the whole answer: {link})")
    assert link in payload.decode() and link in matrix["body"]
    assert sorted(r["channel"] for r in rows) == ["broker", "mail", "matrix"]
    assert all(len(r["attempts"]) == 1 and r["attempts"][0]["delivered"] for r in rows)
    assert {r["source"] for r in rows} == {"schedule:digest"}


async def test_a_failed_session_is_reported_and_a_successful_one_not_when_on_failure(
    make_butler, scripted, webhook: Webhook
):
    extra = notify_table({"hook": webhook.url()}) + schedule_table(
        "digest", "Write the digest.", notify="on-failure"
    )
    butler = await make_butler(extra)

    async def broken(invocation: Invocation) -> RuntimeResult:
        raise RuntimeFailure("model API unreachable", RuntimeResult(output="half a digest"))

    scripted.script = broken
    clock = ManualClock(EIGHT - timedelta(minutes=1))
    try:
        session_id = await fire_at_eight(butler, butler.notifier, clock)
        (body,) = await webhook.until(1)
        assert body["type"] == "failure" and body["title"] == "tester: digest failed"
        assert body["message"].startswith("The schedule digest failed: model API unreachable")
        assert "half a digest" in body["message"]
        assert [str(r["session_id"]) for r in await deliveries(butler.db)] == [session_id]
        scripted.script = _fine
        _, result = await butler.scheduler.run_now("digest", wait=True)
        assert result is not None and result.success
        assert len(await deliveries(butler.db)) == 1  # nothing sent for a success
    finally:
        await stop(butler, butler.notifier)


async def _fine(invocation: Invocation) -> RuntimeResult:
    return RuntimeResult(output="all good")


async def test_a_channel_that_is_down_is_retried_with_backoff_and_the_session_still_succeeds(
    make_butler, scripted, webhook: Webhook
):
    extra = notify_table({"hook": webhook.url()}, retries=3, retry_after_s=30)
    butler = await make_butler(extra + schedule_table("digest", "Write the digest."))
    clock = ManualClock(EIGHT - timedelta(minutes=1))
    credentials = CredentialStore(butler.db)
    notifier = Notifier(butler.config, DeliveryStore(butler.db), credentials, clock=clock)
    webhook.status = 503
    try:
        session_id = await fire_at_eight(butler, notifier, clock)
        row = (await SessionStore(butler.db).get(session_id)) or {}
        assert row["status"] == "succeeded"

        async def attempts(count: int) -> list[dict[str, Any]]:
            found = [r["attempts"] for r in await deliveries(butler.db, session_id)]
            return found[0] if found and len(found[0]) == count else []

        first = await eventually(lambda: attempts(1))
        assert first[0]["delivered"] is False
        assert first[0]["error"].endswith("error=503.")
        (pending,) = await deliveries(butler.db, session_id)
        assert pending["status"] == "pending"
        assert pending["next_at"] == EIGHT + timedelta(seconds=30)
        await eventually(lambda: pending["next_at"] in clock.wake_times)
        clock.advance(timedelta(seconds=30))
        await eventually(lambda: attempts(2))
        (pending,) = await deliveries(butler.db, session_id)
        # Four times longer each time.
        assert pending["next_at"] == EIGHT + timedelta(seconds=30 + 120)
        webhook.status = 200
        await eventually(lambda: pending["next_at"] in clock.wake_times)
        clock.advance(timedelta(seconds=120))
        third = await eventually(lambda: attempts(3))
        assert [a["delivered"] for a in third] == [False, False, True]
        (done,) = await deliveries(butler.db, session_id)
        assert done["status"] == "delivered" and done["error"] is None
        (body,) = await webhook.until(1)
        assert body["message"] == "answer to: Write the digest."
    finally:
        await stop(butler, notifier)
