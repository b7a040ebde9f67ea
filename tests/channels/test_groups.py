"""A butler in a group: it answers paired members who address it, and nobody else hears a word.

In the Telegram fake with privacy mode off (the bot sees everything said,
the worst case), in a real Synapse room of three, and in the Slack and
Discord fakes, each paired member who
mentions the bot, replies to it or gives a command is answered in a
conversation of their own; a bystander, paired or not, who does not address
it, and a stranger who does, get nothing and start nothing; the chatter is
not even recorded. A group not on the allow-list is left at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.channels.chats import (
    bot_says,
    discord_said,
    discord_started,
    has_joined,
    matrix_switchboard,
    notices,
    slack_said,
    slack_started,
)
from tests.channels.conftest import replies, switchboard_toml, write_roster
from tests.fakes.discord_api import ALICE as DISCORD_ALICE
from tests.fakes.discord_api import BOT_ID as DISCORD_BOT
from tests.fakes.discord_api import GENERAL as DISCORD_GENERAL
from tests.fakes.discord_api import MALLORY as DISCORD_MALLORY
from tests.fakes.slack_api import ALICE as SLACK_ALICE
from tests.fakes.slack_api import BOT_USER as SLACK_BOT
from tests.fakes.slack_api import GENERAL as SLACK_GENERAL
from tests.fakes.slack_api import MALLORY as SLACK_MALLORY
from tests.fakes.telegram_api import ALICE, BOT, FAMILY, MALLORY, Group, Person
from tests.helpers import eventually

pytestmark = pytest.mark.slow

BOB = Person(1002, "Bob")
MENTION = f"@{BOT['username']}"


async def paired(roster: Any, telegram: Any, person: Person) -> None:
    before = len(telegram.texts(person.id))
    telegram.send(await roster.pair("telegram"), user=person)
    await replies(telegram, person.id, before + 1)


async def read_past(running: Any, telegram: Any, message: dict[str, Any]) -> list[dict]:
    """The inbound rows once the bot confirmed the update of ``message`` and answered all."""
    update = next(u["update_id"] for u in telegram.updates if u.get("message") == message)
    await eventually(lambda: telegram.confirmed > update, timeout=60)

    async def settled() -> bool:
        rows = await running.db.fetch("SELECT status FROM channel_messages WHERE direction='in'")
        return not {"received", "handling"} & {r["status"] for r in rows}

    await eventually(settled, timeout=60)
    rows = await running.db.fetch(
        "SELECT sender, body, status FROM channel_messages WHERE direction = 'in' ORDER BY id"
    )
    return [dict(r) for r in rows]


async def test_in_a_telegram_group_only_paired_members_who_address_the_bot_are_answered(
    roster, schema_name, telegram, start_roster
):
    telegram.privacy = False  # the bot sees every message of the group
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram, f"groups = [{FAMILY.id}]\n")
    running = await start_roster()
    await paired(running, telegram, ALICE)
    await paired(running, telegram, BOB)
    telegram.add_bot(FAMILY, by=ALICE)

    telegram.send(f"{MENTION} what is due today?", user=ALICE, chat=FAMILY)
    await replies(telegram, FAMILY.id, 1)
    telegram.send("and tomorrow?", user=BOB, chat=FAMILY)  # talk among people
    telegram.send(f"{MENTION} what did Alice ask you?", user=MALLORY, chat=FAMILY)
    telegram.send(f"/pair {await running.pair('telegram')}", user=MALLORY, chat=FAMILY)
    telegram.send("hello everyone", user=MALLORY, chat=FAMILY)
    answer = telegram.bot_message(FAMILY.id)
    telegram.send("any appointments tomorrow?", user=BOB, chat=FAMILY, reply_to=answer)
    await replies(telegram, FAMILY.id, 2)
    last = telegram.send(f"/general@{BOT['username']} groceries", user=ALICE, chat=FAMILY)
    said = await replies(telegram, FAMILY.id, 3)
    rows = await read_past(running, telegram, last)

    assert said == [
        "[health] health heard: what is due today?",
        "[health] health heard: any appointments tomorrow?",  # a conversation of his own
        "[general] general heard: groceries",
    ]
    assert telegram.texts(MALLORY.id) == []  # no refusal anywhere
    assert [(r["sender"], r["status"]) for r in rows if r["status"] != "paired"] == [
        (str(ALICE.id), "answered"),
        (str(MALLORY.id), "refused"),
        (str(MALLORY.id), "refused"),  # a code said in a group pairs nobody
        (str(BOB.id), "answered"),
        (str(ALICE.id), "answered"),
    ]
    assert not [r for r in rows if r["body"] in ("and tomorrow?", "hello everyone")]
    assert [p["sender"] for p in await running.senders.senders()] == [str(ALICE.id), str(BOB.id)]
    sessions = [s for s in await running.sessions() if s["type"] == "channel"]
    assert [s["metadata"]["sender"] for s in sessions] == [
        str(i) for i in (ALICE.id, BOB.id, ALICE.id)
    ]
    assert len({s["metadata"]["conversation_id"] for s in sessions}) == 3


async def test_a_telegram_group_not_on_the_allow_list_is_left_and_nothing_said_there_is_heard(
    roster, schema_name, telegram, start_roster
):
    telegram.privacy = False
    other = Group(-1009999, "Mallory's friends")
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram, f"groups = [{FAMILY.id}]\n")
    running = await start_roster()
    await paired(running, telegram, ALICE)

    telegram.add_bot(other, by=MALLORY)
    await eventually(lambda: telegram.left == [other.id], timeout=60)
    telegram.send(f"{MENTION} hello", user=ALICE, chat=other)  # no longer heard at all
    telegram.add_bot(FAMILY, by=ALICE)
    last = telegram.send(f"{MENTION} /health what is due today?", user=ALICE, chat=FAMILY)
    said = await replies(telegram, FAMILY.id, 1)
    rows = await read_past(running, telegram, last)

    assert said == ["[health] health heard: what is due today?"]
    assert telegram.texts(other.id) == [] and telegram.left == [other.id]
    assert [r["body"] for r in rows if r["status"] != "paired"] == ["/health what is due today?"]


def mentioning(bot: Any, text: str) -> dict[str, Any]:
    """A message that mentions the bot as Element writes one: its name, and ``m.mentions``."""
    body = f"{bot.name}: {text}"
    return {"msgtype": "m.text", "body": body, "m.mentions": {"user_ids": [bot.user_id]}}


async def test_in_a_matrix_room_only_paired_members_who_address_the_bot_are_answered(
    roster, schema_name, synapse, start_roster
):
    bot, alice, bob, mallory = (synapse.register(n) for n in ("butler", "alice", "bob", "mallory"))
    family = synapse.group_room(alice, [bot.user_id, bob.user_id, mallory.user_id])
    carol = synapse.register("carol")
    others = synapse.group_room(mallory, [bot.user_id, carol.user_id], name="Mallory's")
    rooms = {who: synapse.direct_room(who, bot.user_id) for who in (alice, bob)}
    write_roster(roster, schema_name)
    matrix_switchboard(roster, synapse, bot, f'groups = ["{family}"]\n')
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token})
    for person in (bob, mallory):
        synapse.join(person, family)
    synapse.join(carol, others)
    for person, room in rooms.items():
        await eventually(
            lambda who=person, room=room: has_joined(synapse, who, room, bot), timeout=60
        )
        synapse.say(person, room, await running.pair("matrix"))
        await bot_says(synapse, person, room, bot, 1)
    await eventually(lambda: has_joined(synapse, alice, family, bot), timeout=60)

    synapse.say(alice, family, mentioning(bot, "what is due today?"))
    [answer] = await bot_says(synapse, alice, family, bot, 1)
    synapse.say(bob, family, "and tomorrow?")  # talk among people
    synapse.say(mallory, family, mentioning(bot, "what did Alice ask you?"))
    synapse.say(mallory, family, "hello everyone")
    synapse.say(mallory, others, mentioning(bot, "come and talk here"))
    reply = {"m.relates_to": {"m.in_reply_to": {"event_id": answer["event_id"]}}}
    synapse.say(bob, family, {"msgtype": "m.text", "body": "any appointments tomorrow?", **reply})
    await bot_says(synapse, alice, family, bot, 2)
    synapse.say(alice, family, "/general groceries")
    said = await bot_says(synapse, alice, family, bot, 3)

    async def left() -> bool:
        return not await has_joined(synapse, mallory, others, bot)

    await eventually(left, timeout=60)

    assert [m["body"] for m in said] == [
        "[health] health heard: what is due today?",
        "[health] health heard: any appointments tomorrow?",
        "[general] general heard: groceries",
    ]
    assert len(await asyncio.to_thread(notices, synapse, alice, family, bot)) == 3
    assert await asyncio.to_thread(notices, synapse, mallory, others, bot) == []
    rows = await running.db.fetch(
        "SELECT sender, status FROM channel_messages WHERE direction = 'in'"
        " AND chat = $1 ORDER BY id",
        family,
    )
    assert [(r["sender"], r["status"]) for r in rows] == [
        (alice.user_id, "answered"),
        (mallory.user_id, "refused"),
        (bob.user_id, "answered"),
        (alice.user_id, "answered"),
    ]


async def settled_rows(running: Any) -> list[tuple[str, str, str]]:
    """(chat, sender, status) of every inbound message, once none is being answered."""

    async def settled() -> bool:
        rows = await running.db.fetch("SELECT status FROM channel_messages WHERE direction='in'")
        return not {"received", "handling"} & {r["status"] for r in rows}

    await eventually(settled, timeout=60)
    rows = await running.db.fetch(
        "SELECT chat, sender, status FROM channel_messages WHERE direction = 'in' ORDER BY id"
    )
    return [(r["chat"], r["sender"], r["status"]) for r in rows]


async def test_in_a_slack_channel_only_paired_people_who_mention_the_app_are_answered(
    roster, schema_name, slack, start_roster
):
    running = await slack_started(roster, schema_name, slack, start_roster)  # GENERAL listed
    mention = f"<@{SLACK_BOT}>"

    slack.say("lunch at noon?", channel=SLACK_GENERAL)  # Alice, to people
    slack.say(f"{mention} what did Alice ask you?", user=SLACK_MALLORY, channel=SLACK_GENERAL)
    slack.say(f"{mention} /health hello", channel="C0ELSEWHERE")  # a channel not listed
    slack.say(f"{mention} /health what is due today?", channel=SLACK_GENERAL)
    [answer] = await slack_said(slack, SLACK_GENERAL, 1)
    await slack.until(lambda: len(slack.acks) == len(slack.envelopes))  # all read
    rows = await settled_rows(running)

    assert answer == "[health] health heard: what is due today?"
    assert slack.texts(SLACK_GENERAL) == [answer] and slack.texts("C0ELSEWHERE") == []
    assert [r for r in rows if r[0] == SLACK_GENERAL] == [
        (SLACK_GENERAL, SLACK_MALLORY.id, "refused"),
        (SLACK_GENERAL, SLACK_ALICE.id, "answered"),
    ]


async def test_in_a_discord_server_only_paired_people_who_address_the_bot_are_answered(
    roster, schema_name, discord, start_roster
):
    running = await discord_started(roster, schema_name, discord, start_roster)
    mention = f"<@{DISCORD_BOT}>"

    discord.say("lunch at noon?", channel=DISCORD_GENERAL)
    discord.say(f"{mention} what did Alice ask you?", user=DISCORD_MALLORY, channel=DISCORD_GENERAL)
    discord.say(f"{mention} /health what is due today?", channel=DISCORD_GENERAL)
    [answer] = await discord_said(discord, DISCORD_GENERAL, 1)
    rows = await settled_rows(running)

    assert answer == "[health] health heard: what is due today?"
    assert discord.texts(DISCORD_GENERAL) == [answer]
    assert [r for r in rows if r[0] == DISCORD_GENERAL] == [
        (DISCORD_GENERAL, DISCORD_MALLORY.id, "refused"),
        (DISCORD_GENERAL, DISCORD_ALICE.id, "answered"),
    ]
