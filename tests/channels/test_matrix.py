"""The roster's bot on Matrix, against a real Synapse: a person talks to it in a room.

matrix-nio logs the bot user in with its access token from the credentials
store; the person is a second user of the same homeserver, writing through
its client-server API as Element would.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.channels.chats import bot_says, has_joined, matrix_switchboard, notices
from tests.channels.conftest import write_roster
from tests.helpers import eventually
from tests.servers.synapse import MatrixUser, Synapse

pytestmark = pytest.mark.slow

#: The gate reaches the agent of a chat sender's session because the owner lets it.
GATED = (
    '\n[butler.env]\noptional = ["AGENT_GATE"]\n\n[butler.channels]\nsender_env = ["AGENT_GATE"]\n'
)


@pytest.fixture
def matrix(synapse: Synapse) -> dict[str, Any]:
    """A bot user and a person, in a private room the person made and invited the bot to."""
    bot, person = synapse.register("butler"), synapse.register("alice")
    room = synapse.direct_room(person, bot.user_id)
    return {"bot": bot, "person": person, "room": room}


async def test_what_is_due_today_on_matrix_reaches_health_and_a_follow_up_continues(
    roster, schema_name, synapse, matrix, start_roster, tmp_path
):
    bot, person, room = matrix["bot"], matrix["person"], matrix["room"]
    gate = tmp_path / "gate"
    write_roster(roster, schema_name, {"health": GATED})
    matrix_switchboard(roster, synapse, bot)
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token, "AGENT_GATE": str(gate)})
    await eventually(lambda: has_joined(synapse, person, room, bot), timeout=60)

    synapse.say(person, room, "hello?")
    [refusal] = await bot_says(synapse, person, room, bot, 1)
    synapse.say(person, room, await running.pair("matrix"))
    since = synapse.position(person)
    asked = synapse.say(person, room, "what is due today? WAIT")
    seen: list[str] = []
    while bot.user_id not in seen:  # the bot shows as typing while its session runs
        seen, since = await asyncio.to_thread(synapse.typing, person, room, since)
    gate.touch()
    synapse.say(person, room, "and tomorrow?")
    said = await bot_says(synapse, person, room, bot, 4)

    assert refusal["body"].startswith("This bot answers only people paired with it")
    assert said[1]["body"].startswith("Paired")
    assert said[2]["body"] == "[health] health heard: what is due today? WAIT"
    assert said[2]["msgtype"] == "m.notice"
    assert said[2]["m.relates_to"] == {"m.in_reply_to": {"event_id": asked}}
    assert said[3]["body"] == "[health] health heard: and tomorrow?\nearlier turns: 2"
    sessions = [s for s in await running.sessions() if s["type"] == "channel"]
    assert [s["metadata"]["sender"] for s in sessions] == [person.user_id] * 2
    assert [s["metadata"]["thread"] for s in sessions] == [room] * 2
    assert sessions[0]["metadata"]["conversation_id"] == sessions[1]["metadata"]["conversation_id"]
    assert running.state("matrix")["status"] == "connected"


def in_thread(root: str, latest: str, text: str) -> dict[str, Any]:
    """A message in the thread on ``root``, as Element sends it (replying, as a fallback for
    clients without threads, to the thread's latest event)."""
    relates = {
        "rel_type": "m.thread",
        "event_id": root,
        "is_falling_back": True,
        "m.in_reply_to": {"event_id": latest},
    }
    return {"msgtype": "m.text", "body": text, "m.relates_to": relates}


async def test_a_follow_up_in_a_thread_on_the_answer_continues_its_conversation_there(
    roster, schema_name, synapse, matrix, start_roster
):
    bot, person, room = matrix["bot"], matrix["person"], matrix["room"]
    write_roster(roster, schema_name)
    matrix_switchboard(roster, synapse, bot)
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token})
    await eventually(lambda: has_joined(synapse, person, room, bot), timeout=60)
    synapse.say(person, room, await running.pair("matrix"))
    await bot_says(synapse, person, room, bot, 1)

    synapse.say(person, room, "/health what is due today?")
    answer = (await bot_says(synapse, person, room, bot, 2))[1]["event_id"]
    synapse.say(person, room, "/general buy milk")
    await bot_says(synapse, person, room, bot, 3)
    synapse.say(person, room, in_thread(answer, answer, "and tomorrow?"))
    in_it = (await bot_says(synapse, person, room, bot, 4))[3]
    synapse.say(person, room, in_thread(answer, in_it["event_id"], "and the day after?"))
    said = await bot_says(synapse, person, room, bot, 5)

    # Not "Which butler should answer?": the thread is on health's answer, so health
    # carries on that conversation, and answers in the thread.
    assert said[3]["body"] == "[health] health heard: and tomorrow?\nearlier turns: 2"
    assert said[4]["body"] == "[health] health heard: and the day after?\nearlier turns: 4"
    for answered in said[3:]:
        assert answered["m.relates_to"]["rel_type"] == "m.thread"
        assert answered["m.relates_to"]["event_id"] == answer
    sessions = [s for s in await running.sessions() if s["type"] == "channel"]
    conversations = [s["metadata"]["conversation_id"] for s in sessions]
    assert conversations[0] == conversations[2] == conversations[3] != conversations[1]
    assert [s["metadata"]["routed_by"] for s in sessions[2:]] == ["conversation"] * 2


async def test_commands_on_matrix_are_answered_without_a_session_and_a_kept_message_is_answered(
    roster, schema_name, synapse, matrix, start_roster
):
    bot, person, room = matrix["bot"], matrix["person"], matrix["room"]
    write_roster(roster, schema_name)
    matrix_switchboard(roster, synapse, bot)
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token})
    await eventually(lambda: has_joined(synapse, person, room, bot), timeout=60)
    synapse.say(person, room, await running.pair("matrix"))
    await bot_says(synapse, person, room, bot, 1)

    synapse.say(person, room, "/butlers")
    butlers = (await bot_says(synapse, person, room, bot, 2))[1]["body"]
    assert butlers.startswith("Butlers that answer here:\n/general")
    assert [s["type"] for s in await running.sessions()] == []

    synapse.say(person, room, "hmm, is the thing on friday?")
    asked = (await bot_says(synapse, person, room, bot, 3))[2]["body"]
    synapse.say(person, room, "/health")
    answer = (await bot_says(synapse, person, room, bot, 4))[3]["body"]

    assert asked.startswith("Which butler should answer?")
    assert answer == "[health] health heard: hmm, is the thing on friday?"


async def test_a_file_is_read_by_the_runtime_and_an_encrypted_room_is_named_in_one_line(
    roster, schema_name, synapse, matrix, start_roster
):
    bot, person, room = matrix["bot"], matrix["person"], matrix["room"]
    write_roster(roster, schema_name)
    matrix_switchboard(roster, synapse, bot)
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token})
    await eventually(lambda: has_joined(synapse, person, room, bot), timeout=60)
    synapse.say(person, room, await running.pair("matrix"))
    synapse.say(person, room, "/health a file follows")
    await bot_says(synapse, person, room, bot, 2)

    url = synapse.upload(person, b"Iron 65 mg at 8:00.\n", "text/plain")
    info = {"mimetype": "text/plain", "size": 20}
    synapse.say(person, room, {"msgtype": "m.file", "body": "meds.txt", "url": url, "info": info})
    secret = synapse.direct_room(person, bot.user_id, encrypted=True)
    await eventually(lambda: has_joined(synapse, person, secret, bot), timeout=60)
    ciphertext = {"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgA", "session_id": "s"}
    path = f"/_matrix/client/v3/rooms/{secret}/send/m.room.encrypted/t1"
    synapse.call("PUT", path, {**ciphertext, "sender_key": "k", "device_id": "D"}, person.token)
    read = await bot_says(synapse, person, room, bot, 3)
    [encrypted] = await bot_says(synapse, person, secret, bot, 1)

    assert read[2]["body"] == (
        "[health] health heard: (The person sent 1 attachment(s) and no text.)\n"
        "earlier turns: 2\nattachment-1.txt says: Iron 65 mg at 8:00."
    )
    assert encrypted["body"].startswith("Not accepted: this room is end-to-end encrypted")
    assert [s["type"] for s in await running.sessions()] == ["channel", "channel"]


async def test_files_sent_one_after_another_are_one_message_answered_once(
    roster, schema_name, synapse, matrix, start_roster
):
    bot, person, room = matrix["bot"], matrix["person"], matrix["room"]
    write_roster(roster, schema_name)
    matrix_switchboard(roster, synapse, bot)
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token})
    await eventually(lambda: has_joined(synapse, person, room, bot), timeout=60)
    synapse.say(person, room, await running.pair("matrix"))
    synapse.say(person, room, "/health files follow")
    await bot_says(synapse, person, room, bot, 2)

    for text in (b"Iron 65 mg at 8:00.\n", b"Dentist at 15:30.\n"):  # two picked at once
        url = synapse.upload(person, text, "text/plain")
        info = {"mimetype": "text/plain", "size": len(text)}
        synapse.say(person, room, {"msgtype": "m.file", "body": "f.txt", "url": url, "info": info})
    read = await bot_says(synapse, person, room, bot, 3)

    assert read[2]["body"] == (
        "[health] health heard: (The person sent 2 attachment(s) and no text.)\n"
        "earlier turns: 2\nattachment-1.txt says: Iron 65 mg at 8:00.\n"
        "attachment-2.txt says: Dentist at 15:30."
    )
    assert [s["type"] for s in await running.sessions()] == ["channel", "channel"]
    statuses = await running.db.fetch(
        "SELECT status FROM channel_messages WHERE direction = 'in' ORDER BY id"
    )
    assert [r["status"] for r in statuses][-2:] == ["answered", "merged"]


async def test_a_homeserver_restarted_mid_answer_gets_the_answer_once_and_loses_nothing(
    roster, schema_name, synapse, matrix, start_roster, tmp_path
):
    bot, person, room = matrix["bot"], matrix["person"], matrix["room"]
    gate = tmp_path / "gate"
    write_roster(roster, schema_name, {"health": GATED})
    matrix_switchboard(roster, synapse, bot)
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token, "AGENT_GATE": str(gate)})
    await eventually(lambda: has_joined(synapse, person, room, bot), timeout=60)
    synapse.say(person, room, await running.pair("matrix"))
    await bot_says(synapse, person, room, bot, 1)

    synapse.say(person, room, "/health WAIT while it restarts")

    async def running_session() -> bool:
        found = await running.db.fetch("SELECT status FROM sessions WHERE type = 'channel'")
        return [r["status"] for r in found] == ["running"]

    await eventually(running_session)
    await asyncio.to_thread(synapse.stop)
    await eventually(lambda: running.state("matrix")["status"] == "retrying", timeout=60)
    gate.touch()
    await asyncio.to_thread(synapse.start)
    synapse.say(person, room, "and after it?")
    said = await bot_says(synapse, person, room, bot, 3)
    await eventually(lambda: running.state("matrix")["status"] == "connected", timeout=60)

    assert [m["body"] for m in said[1:]] == [
        "[health] health heard: WAIT while it restarts",
        "[health] health heard: and after it?\nearlier turns: 2",
    ]
    assert len(await asyncio.to_thread(notices, synapse, person, room, bot)) == 3
    assert len(await running.sessions()) == 2


async def membership(synapse: Synapse, person: MatrixUser, room: str, bot: MatrixUser) -> str:
    """The bot's membership of ``room`` as ``person`` (a member) sees it: invite, join, leave."""
    path = f"/_matrix/client/v3/rooms/{room}/state/m.room.member/{bot.user_id}"
    found = await asyncio.to_thread(synapse.call, "GET", path, None, person.token)
    return str(found["membership"])


async def test_a_strangers_invites_never_use_up_the_owners_rooms_and_unpaired_ones_are_left(
    roster, schema_name, synapse, start_roster
):
    """With room for two of the owner's rooms and one stranger's: the owner pairs in her
    room, a stranger's second invite is declined, the owner's second room is still joined,
    and the stranger's room where nobody paired is left after its window."""
    bot, alice, mallory = (synapse.register(n) for n in ("butler", "alice", "mallory"))
    write_roster(roster, schema_name)
    limits = "max_rooms = 2\nmax_stranger_rooms = 1\nstranger_room_minutes = 0.5\n"
    matrix_switchboard(roster, synapse, bot, limits)
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token})
    own = synapse.direct_room(alice, bot.user_id)
    await eventually(lambda: has_joined(synapse, alice, own, bot), timeout=60)
    synapse.say(alice, own, await running.pair("matrix"))
    [paired] = await bot_says(synapse, alice, own, bot, 1)

    first = synapse.direct_room(mallory, bot.user_id)
    await eventually(lambda: has_joined(synapse, mallory, first, bot), timeout=60)
    second = synapse.direct_room(mallory, bot.user_id)

    async def declined() -> bool:
        return await membership(synapse, mallory, second, bot) == "leave"

    await eventually(declined, timeout=60)
    other = synapse.direct_room(alice, bot.user_id)
    await eventually(lambda: has_joined(synapse, alice, other, bot), timeout=60)

    async def left() -> bool:
        return await membership(synapse, mallory, first, bot) == "leave"

    await eventually(left, timeout=120)
    assert paired["body"].startswith("Paired")
    assert await has_joined(synapse, alice, own, bot)
    assert await has_joined(synapse, alice, other, bot)
