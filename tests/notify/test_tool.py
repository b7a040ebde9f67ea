"""The notify tool's refusals, attachments, limits and quiet hours, against a real webhook."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError
from starlette.applications import Starlette

from butler.context import ButlerContext
from butler.dashboard.deliveries import delivery_routes
from butler.dashboard.view import View
from butler.notify import Notifier
from butler.store.credentials import CredentialStore
from butler.store.deliveries import DeliveryStore
from tests.fakes.clock import ManualClock
from tests.helpers import eventually
from tests.notify.conftest import deliveries, notify_table
from tests.servers.webhook import Webhook

pytestmark = pytest.mark.slow


async def call(butler: ButlerContext, **arguments: Any) -> dict[str, Any]:
    from butler.server import build_mcp

    async with Client(build_mcp(butler)) as client:
        result = await client.call_tool("notify", arguments)
    return result.structured_content


async def refusal(butler: ButlerContext, **arguments: Any) -> str:
    with pytest.raises(ToolError) as refused:
        await call(butler, **arguments)
    line = str(refused.value)
    assert "\n" not in line
    return line


@pytest.mark.parametrize(
    "channel",
    ["json://attacker.example/collect", "stranger@example.com", "-1001234567890", "../hook"],
)
async def test_a_url_an_address_or_a_chat_id_as_channel_is_refused_in_one_line(
    make_butler, webhook: Webhook, channel: str
):
    butler = await make_butler(notify_table({"hook": webhook.url()}))
    line = await refusal(butler, message="hi", channel=channel)
    assert line == (
        "notify: channel: expected the name of one of the owner's channels (hook); "
        "a URL, an address or a chat id is never accepted"
    )
    assert await deliveries(butler.db) == [] and webhook.posts == []


async def test_an_unknown_channel_or_none_configured_is_refused_naming_the_fix(
    make_butler, webhook: Webhook
):
    butler = await make_butler(notify_table({"hook": webhook.url()}))
    assert await refusal(butler, message="hi", channel="pager") == (
        "notify: channel: no channel named 'pager'; the owner's channels are: hook"
    )
    bare = await make_butler(name="bare")
    assert await refusal(bare, message="hi") == (
        "notify: this butler has no channel to reach its person; the owner names them "
        "under [butler.notify.channels] in butler.toml (see docs/notify.md)"
    )


async def test_an_attachment_outside_the_butlers_folder_or_through_a_link_is_refused(
    make_butler, webhook: Webhook, tmp_path
):
    butler = await make_butler(notify_table({"hook": webhook.url()}, max_attachment_bytes=100))
    folder = butler.config.config_dir
    secret = tmp_path / "owner-key.pem"
    secret.write_text("PRIVATE KEY")
    (folder / "key-link.pem").symlink_to(secret)
    (folder / "linked-dir").symlink_to(tmp_path)
    os.mkfifo(folder / "pipe")
    (folder / "big.bin").write_bytes(b"x" * 101)
    refusals = {
        str(secret): "is outside the butler's folder",
        "../owner-key.pem": "leaves the butler's folder",
        "key-link.pem": "links are not followed",
        "linked-dir/owner-key.pem": "links are not followed",
        "pipe": "only a regular file is read",
        "big.bin": "is over 100 bytes; expected at most 100",
        "http://example.com/x.png": "no such file in the butler's folder",
    }
    for path, reason in refusals.items():
        line = await refusal(butler, message="see attached", attach=path)
        assert line.startswith("notify: attach: ") and reason in line, (path, line)
    assert webhook.posts == [] and await deliveries(butler.db) == []


async def test_the_butler_refuses_more_messages_per_hour_than_it_allows(
    make_butler, webhook: Webhook
):
    butler = await make_butler(notify_table({"hook": webhook.url()}, max_per_hour=2))
    await call(butler, message="one")
    await call(butler, message="two")
    line = await refusal(butler, message="three")
    assert line == (
        "notify: this butler has sent 2 messages in the last hour, the most "
        "[butler.notify] max_per_hour allows; try again later"
    )
    assert [b["message"] for b in await webhook.until(2)] == ["one", "two"]
    # Refused, not dropped: the third is a row saying why, and counts toward no limit.
    rows = await deliveries(butler.db)
    assert [(r["body"], r["status"]) for r in rows][2] == ("three", "refused")
    assert rows[2]["error"] == line.removeprefix("notify: ")


def quiet_notifier(butler: ButlerContext, clock: ManualClock) -> Notifier:
    credentials = CredentialStore(butler.db)
    return Notifier(butler.config, DeliveryStore(butler.db), credentials, clock=clock)


async def test_quiet_hours_hold_a_message_until_they_end_but_let_an_urgent_one_through(
    make_butler, webhook: Webhook
):
    settings = {"quiet": "22:00-07:00", "timezone": "Europe/Paris"}
    butler = await make_butler(notify_table({"hook": webhook.url()}, **settings))
    night = datetime(2026, 1, 15, 22, 30, tzinfo=UTC)  # 23:30 in Paris
    morning = datetime(2026, 1, 16, 6, 0, tzinfo=UTC)  # 07:00 in Paris
    clock = ManualClock(night)
    butler.notifier = quiet_notifier(butler, clock)
    try:
        held = await call(butler, message="Weekly summary ready.")
        assert held == {
            "channels": [{"channel": "hook", "status": "held", "until": morning.isoformat()}]
        }
        await call(butler, message="Fall detected!", priority="high")
        (urgent,) = await webhook.until(1)
        assert urgent["message"] == "Fall detected!"
        await eventually(lambda: morning in clock.wake_times)
        assert len(webhook.posts) == 1  # the summary still waits
        clock.set(morning)
        _, second = await webhook.until(2)
        assert second["message"] == "Weekly summary ready."
    finally:
        await butler.notifier.stop()


async def test_messages_held_by_quiet_hours_go_out_as_one_digest_each_keeping_its_row(
    make_butler, webhook: Webhook
):
    butler = await make_butler(notify_table({"hook": webhook.url()}, quiet="00:00-08:00"))
    clock = ManualClock(datetime(2026, 1, 15, 3, 0, tzinfo=UTC))
    butler.notifier = quiet_notifier(butler, clock)
    try:
        for minute, text in enumerate(("Lab results are in.", "The parcel came.", "Summary.")):
            clock.set(datetime(2026, 1, 15, 3, minute, tzinfo=UTC))
            await call(butler, message=text)
        await eventually(lambda: datetime(2026, 1, 15, 8, 0, tzinfo=UTC) in clock.wake_times)
        clock.set(datetime(2026, 1, 15, 8, 0, tzinfo=UTC))
        (digest,) = await webhook.until(1)
        assert digest["title"] == "3 messages held during quiet hours"
        assert digest["message"].index("Lab results") < digest["message"].index("The parcel")
        assert digest["message"].endswith("Summary.")

        async def settled() -> bool:
            statuses = [r["status"] for r in await deliveries(butler.db)]
            return statuses == ["delivered", "merged", "merged"]

        await eventually(settled)
        rows = await deliveries(butler.db)
        assert rows[1]["error"] == f"merged into the quiet-hours digest {rows[0]['id']}"
    finally:
        await butler.notifier.stop()
    assert len(webhook.posts) == 1


async def test_a_held_message_survives_a_restart_and_goes_out_when_quiet_hours_end(
    make_butler, webhook: Webhook
):
    butler = await make_butler(notify_table({"hook": webhook.url()}, quiet="00:00-08:00"))
    clock = ManualClock(datetime(2026, 1, 15, 3, 0, tzinfo=UTC))
    butler.notifier = quiet_notifier(butler, clock)
    await call(butler, message="Lab results are in.")
    await butler.notifier.stop()  # the daemon stops with the message held
    later = ManualClock(datetime(2026, 1, 15, 8, 0, tzinfo=UTC))
    restarted = quiet_notifier(butler, later)
    await restarted.start()
    try:
        (body,) = await webhook.until(1)
        assert body["message"] == "Lab results are in."
        (row,) = await deliveries(butler.db)
        await eventually(lambda: _status(butler, "delivered"))
        assert row["next_at"] == datetime(2026, 1, 15, 8, 0, tzinfo=UTC)
    finally:
        await restarted.stop()
    assert len(webhook.posts) == 1


async def _status(butler: ButlerContext, status: str) -> bool:
    return [r["status"] for r in await deliveries(butler.db)] == [status]


async def test_a_message_interrupted_while_sending_is_sent_again_at_the_next_start(
    make_butler, webhook: Webhook
):
    butler = await make_butler(notify_table({"hook": webhook.url()}))
    await call(butler, message="Refill ordered.")
    await butler.db.execute("UPDATE deliveries SET status = 'sending', next_at = NULL")
    restarted = quiet_notifier(butler, ManualClock(datetime.now(UTC) + timedelta(minutes=1)))
    await restarted.start()
    try:
        first, again = await webhook.until(2)
        assert first == again
        await eventually(lambda: _status(butler, "delivered"))
    finally:
        await restarted.stop()


async def test_the_deliveries_page_lists_what_every_butler_sent_and_what_was_refused_and_why(
    make_butler, webhook: Webhook
):
    butler = await make_butler(notify_table({"hook": webhook.url()}, max_per_hour=1))
    await call(butler, message="one")
    await refusal(butler, message="two")
    app = Starlette(routes=delivery_routes(View(butler, lambda: "token")))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://dashboard") as client:
        page = (await client.get("/deliveries")).text

    rows = page.split('<div id="deliveries">', 1)[1]
    assert rows.index('data-status="refused"') < rows.index('data-status="delivered"')
    assert "[butler.notify] max_per_hour allows; try again later" in rows
    assert f"<td>{butler.config.name}</td>" in rows
