"""The notify tool against real services: a mail server, MQTT, Matrix, a webhook, Telegram's API.

The owner calls the tool here (sessions calling it are in test_sessions.py
and test_jailed.py); each message goes through Apprise to a real server on
loopback (Telegram's through its real HTTP API, faked: it cannot run here).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from butler.context import ButlerContext
from butler.server import build_mcp
from butler.store.credentials import CredentialStore
from tests.fakes.telegram import TelegramAtItsAddress
from tests.notify.conftest import deliveries, notify_table
from tests.servers.mail import MailServer
from tests.servers.mqtt import Subscriber
from tests.servers.synapse import Synapse
from tests.servers.webhook import Webhook

pytestmark = pytest.mark.slow


async def notify(butler: ButlerContext, **arguments: Any) -> dict[str, Any]:
    async with Client(build_mcp(butler)) as client:
        result = await client.call_tool("notify", arguments)
    return result.structured_content


async def delivered_once(butler: ButlerContext, channel: str) -> dict[str, Any]:
    (row,) = await deliveries(butler.db)
    assert (row["channel"], row["status"]) == (channel, "delivered")
    (attempt,) = row["attempts"]
    assert attempt["delivered"] is True and attempt["error"] is None
    return row


async def test_mail_arrives_with_sender_subject_body_and_attachment(
    make_butler, mail_server: MailServer
):
    url = mail_server.url("butler@example.test", "person@example.test")
    butler = await make_butler(notify_table({"mail": url}))
    notes = butler.config.config_dir / "notes"
    notes.mkdir()
    (notes / "week.txt").write_text("Mon: dentist\n")
    answer = await notify(
        butler, message="Iron: 65 mg due at 8.", title="Medication", attach="notes/week.txt"
    )
    assert answer == {"channels": [{"channel": "mail", "status": "delivered", "error": None}]}
    (mail,) = mail_server.wait(1)
    assert mail.mail_from == "butler@example.test" and mail.rcpt_tos == ["person@example.test"]
    assert mail.subject == "Medication"
    assert "Iron: 65 mg due at 8." in mail.body
    assert mail.attachments() == {"week.txt": b"Mon: dentist\n"}
    row = await delivered_once(butler, "mail")
    assert row["attachment"] == "week.txt"


async def test_mqtt_subscriber_gets_the_title_and_message(make_butler, mqtt_subscriber: Subscriber):
    butler = await make_butler(notify_table({"broker": mqtt_subscriber.url()}))
    await notify(butler, message="Blood pressure logged.", title="Health")
    (payload,) = mqtt_subscriber.wait(1)
    assert payload.decode() == "Health\r\nBlood pressure logged."
    await delivered_once(butler, "broker")


async def test_a_matrix_user_reads_the_message_in_their_room(make_butler, synapse: Synapse):
    person, bot = synapse.register("person"), synapse.register("butler")
    alias = f"notify{bot.name}"
    room = synapse.create_room(person, alias)
    synapse.join(bot, room)  # the bot is in the room before anything is sent there
    url = f"matrix://{bot.name}:{{MATRIX_PASSWORD}}@127.0.0.1:{synapse.port}/#{alias}:localhost"
    butler = await make_butler(notify_table({"matrix": url}))
    await CredentialStore(butler.db).set("MATRIX_PASSWORD", bot.password)
    await notify(butler, message="Appointment moved to Friday.", title="Calendar")
    (message,) = [m for m in synapse.messages(person, room) if m["sender"] == bot.user_id]
    assert "Calendar" in message["body"] and "Appointment moved to Friday." in message["body"]
    await delivered_once(butler, "matrix")


async def test_notify_test_fails_for_a_matrix_room_that_does_not_exist_and_creates_none(
    make_butler, synapse: Synapse
):
    bot = synapse.register("butler")
    alias = f"#nosuchroom{bot.name}:localhost"
    url = f"matrix://{bot.name}:{{MATRIX_PASSWORD}}@127.0.0.1:{synapse.port}/{alias}"
    butler = await make_butler(notify_table({"matrix": url}))
    await CredentialStore(butler.db).set("MATRIX_PASSWORD", bot.password)

    (tested,) = await butler.notifier.test("matrix")

    assert not tested.outcome.delivered
    assert tested.outcome.error == (
        f"Matrix room {alias} does not exist: create it, invite {bot.user_id} and accept "
        "the invite as that user (the butler never creates a room)"
    )
    joined = synapse.call("GET", "/_matrix/client/v3/joined_rooms", token=bot.token)
    assert joined["joined_rooms"] == []  # Apprise made no room of its own


async def test_notify_test_fails_for_a_matrix_room_the_bot_is_not_in(make_butler, synapse: Synapse):
    person, bot = synapse.register("person"), synapse.register("butler")
    alias = f"notin{bot.name}"
    synapse.create_room(person, alias)
    url = f"matrix://{bot.name}:{{MATRIX_PASSWORD}}@127.0.0.1:{synapse.port}/#{alias}:localhost"
    butler = await make_butler(notify_table({"matrix": url}))
    await CredentialStore(butler.db).set("MATRIX_PASSWORD", bot.password)

    (tested,) = await butler.notifier.test("matrix")

    assert not tested.outcome.delivered
    assert tested.outcome.error.startswith(
        f"{bot.user_id} is not in Matrix room #{alias}:localhost: invite it"
    )


async def test_a_webhook_receives_json_with_the_priority_as_its_type(make_butler, webhook: Webhook):
    butler = await make_butler(notify_table({"hook": webhook.url()}))
    await notify(butler, message="Smoke alarm test failed.", title="House", priority="high")
    (body,) = webhook.wait(1)
    assert (body["title"], body["message"], body["type"]) == (
        "House",
        "Smoke alarm test failed.",
        "warning",
    )
    await delivered_once(butler, "hook")


async def test_telegram_bot_api_gets_the_message_as_escaped_text_and_the_document(
    make_butler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    with TelegramAtItsAddress(tmp_path) as telegram:
        for name, value in telegram.env().items():
            monkeypatch.setenv(name, value)
        channel = notify_table({"phone": "tgram://{TELEGRAM_BOT_TOKEN}/{TELEGRAM_CHAT_ID}"})
        butler = await make_butler(channel)
        store = CredentialStore(butler.db)
        await store.set("TELEGRAM_BOT_TOKEN", telegram.token)
        await store.set("TELEGRAM_CHAT_ID", telegram.chat_id)
        (butler.config.config_dir / "chart.csv").write_text("day,steps\nmon,4000\n")
        await notify(butler, message="Walk <b>more</b> *today*", title="Steps")
        await notify(butler, message="This week", attach="chart.csv")
        first, second = telegram.wait(2)
    assert first["method"] == "sendMessage" and str(first["chat_id"]) == telegram.chat_id
    # Plain text: what the session wrote is shown, never rendered as HTML.
    assert first["text"] == "<b>Steps</b>\r\nWalk &lt;b&gt;more&lt;/b&gt; *today*"
    assert second["method"] == "sendDocument"
    assert second["document"] == {"filename": "chart.csv", "content": b"day,steps\nmon,4000\n"}
    rows = await deliveries(butler.db)
    assert [r["status"] for r in rows] == ["delivered", "delivered"]
    assert telegram.token not in json.dumps([dict(r) for r in rows], default=str)
