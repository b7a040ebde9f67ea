"""What goes wrong around a chat: a server restarted mid-answer, a daemon restarted before
one, a failing session, a sender writing too fast, a bad token."""

from __future__ import annotations

import logging

import pytest

from butler.channels.message import Inbound
from butler.logs import quiet_libraries
from butler.store.conversations import ConversationStore, MessageRecord
from tests.channels.chats import telegram_answer_to as answer_to
from tests.channels.chats import telegram_paired as paired
from tests.channels.conftest import replies, switchboard_toml, write_roster
from tests.fakes.telegram_api import ALICE, FakeTelegram
from tests.helpers import eventually

#: Each answer runs the command runtime: a real process.
pytestmark = pytest.mark.slow

#: The gate reaches the agent of a chat sender's session because the owner lets it.
GATED = (
    '\n[butler.env]\noptional = ["AGENT_GATE"]\n\n[butler.channels]\nsender_env = ["AGENT_GATE"]\n'
)


async def test_a_server_restarted_mid_conversation_loses_nothing_and_answers_nothing_twice(
    roster, schema_name, telegram, start_roster, tmp_path
):
    gate = tmp_path / "gate"
    write_roster(roster, schema_name, {"health": GATED})
    switchboard_toml(roster, telegram)
    running = await start_roster({"AGENT_GATE": str(gate)})
    await paired(running, telegram)

    telegram.send("/health WAIT for it", user=ALICE)
    await eventually(lambda: any(a["chat_id"] == ALICE.id for a in telegram.actions))
    telegram.stop()  # the server goes away while the session runs
    telegram.send("/health after the restart", user=ALICE)  # written while it is away
    gate.touch()

    async def answered() -> bool:
        rows = await running.db.fetch("SELECT status FROM sessions WHERE type = 'channel'")
        return [r["status"] for r in rows] == ["succeeded"]

    await eventually(answered)  # the answer is ready, and cannot be sent yet
    await eventually(lambda: running.state("telegram")["status"] == "retrying")
    telegram.start()
    texts = await replies(telegram, ALICE.id, 3)
    await eventually(lambda: running.state("telegram")["status"] == "connected")

    assert texts[1:] == [
        "[health] health heard: WAIT for it",
        "[health] health heard: after the restart\nearlier turns: 2",
    ]
    await eventually(lambda: len([s for s in telegram.sent if s["chat_id"] == ALICE.id]) == 3)
    sessions = await running.sessions()
    assert [s["metadata"]["routed_by"] for s in sessions] == ["mention", "mention"]
    assert running.state("telegram")["reconnects"] >= 1


async def test_a_message_left_unanswered_at_shutdown_is_answered_after_the_restart(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    first = await start_roster()
    await paired(first, telegram)
    first.spawners["health"].stop_accepting()  # a drain has begun

    telegram.send("/health still there?", user=ALICE)

    async def recorded() -> bool:
        rows = await first.db.fetch("SELECT status FROM channel_messages WHERE body LIKE '%there?'")
        return [r["status"] for r in rows] == ["received"]

    await eventually(recorded)
    for service in first.services.values():
        await service.stop(5)
    second = await start_roster()  # the daemon starts again
    texts = await replies(telegram, ALICE.id, 2)

    assert texts[1] == "[health] health heard: still there?"
    assert len(await second.sessions()) == 1


async def test_a_failing_session_says_so_in_one_line(roster, schema_name, telegram, start_roster):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    reply = await answer_to(telegram, "/health FAIL now")

    assert reply.startswith("[health] could not answer: ")
    assert "\n" not in reply and len(reply) < 320
    assert [s["status"] for s in await running.sessions()] == ["failed"]


async def test_a_burst_over_the_rate_is_answered_in_turn_paced_and_nothing_is_dropped(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram, "")
    toml = roster / "switchboard.toml"
    limited = toml.read_text().replace(
        "\npoll_timeout_s", "\nmax_messages_per_minute = 3\npoll_timeout_s"
    )
    toml.write_text(limited)
    running = await start_roster()
    await paired(running, telegram)  # the code is the first of three

    for n in range(4):
        telegram.send(f"/health number {n}", user=ALICE)

    async def settled() -> bool:
        rows = await running.db.fetch(
            "SELECT status FROM channel_messages WHERE direction = 'in' ORDER BY id"
        )
        return [r["status"] for r in rows] == ["paired"] + ["answered"] * 4

    await eventually(settled, timeout=150)  # the last two wait for the minute to pass
    texts = await replies(telegram, ALICE.id, 6)
    assert [text.split("\n")[0] for text in texts[1:]] == [
        "[health] health heard: number 0",
        "[health] health heard: number 1",
        "Many messages at once: each is answered in turn, at most 3 a minute.",
        "[health] health heard: number 2",
        "[health] health heard: number 3",
    ]
    assert len(await running.sessions()) == 4


async def test_a_refused_token_shows_in_the_state_and_never_in_a_log_line(
    roster, schema_name, telegram: FakeTelegram, start_roster, caplog
):
    wrong = "424242:the-wrong-token-must-not-leak"
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    caplog.set_level(logging.DEBUG)
    quiet_libraries()  # as the daemon's logging does
    running = await start_roster({"TELEGRAM_BOT_TOKEN": wrong})

    await eventually(lambda: running.state("telegram")["status"] == "retrying")

    state = running.state("telegram")
    assert state["error"] == "telegram: the bot token was refused; expected BotFather's token"
    assert state["butler"] == "general" and state["switchboard"] is True
    assert wrong not in caplog.text and "the-wrong-token" not in caplog.text


async def test_a_message_whose_session_a_crash_cut_short_is_named_at_the_next_start(
    roster, schema_name, telegram, start_roster, db
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    first = await start_roster()
    await paired(first, telegram)
    for service in first.services.values():
        await service.stop(5)
    # What a killed daemon leaves: a message whose session had started, never answered.
    cut = Inbound("telegram", "1001:900", str(ALICE.id), "", str(ALICE.id), "Alice", "what is due?")
    record = MessageRecord(
        channel="telegram",
        direction="in",
        external_id=cut.external_id,
        chat=cut.chat,
        sender=cut.sender,
        body=cut.text,
        payload=cut.payload(),
        status="handling",
    )
    await ConversationStore(db).record(record)

    await start_roster()
    texts = await replies(telegram, ALICE.id, 2)

    assert texts[1] == "The butler stopped while answering this; please send it again."
    statuses = await db.fetch("SELECT status FROM channel_messages WHERE external_id = '1001:900'")
    assert [r["status"] for r in statuses] == ["failed"]


async def test_flood_control_is_waited_out_as_telegram_says_and_the_answer_sent_once(
    roster, schema_name, telegram: FakeTelegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    telegram.flood(times=1, retry_after=2)
    telegram.send("/health what is due today?", user=ALICE)
    texts = await replies(telegram, ALICE.id, 2)

    assert texts[1] == "[health] health heard: what is due today?"
    assert telegram.flooded == 1 and telegram.too_early == 0  # no retry before 2 s

    async def both_recorded_sent() -> bool:
        query = "SELECT status FROM channel_messages WHERE direction = 'out' ORDER BY id"
        return [r["status"] for r in await running.db.fetch(query)] == ["sent", "sent"]

    await eventually(both_recorded_sent, timeout=30)
