"""The roster's Discord bot over the Gateway: pairing, threads, attachments, resumes, rate limits.

hikari (its ``GatewayBot``: the Gateway shard and the REST client, unchanged,
pointed at the fake by its public ``rest_url``) talks to
tests/fakes/discord_api.py over real HTTP and a real, zlib-compressed
WebSocket; every answer is a real session of the ``command`` runtime
recorded in PostgreSQL.

Why the fake can stand for Discord. What it serves was checked against
Discord's developer documentation (Gateway: connecting, the opcode and close
code tables, heartbeating, identifying, resuming, transport compression;
the Message, Channel and User resources; Rate Limits) and against how
hikari 2.x reads it (``hikari/impl/shard.py``, ``rest.py``,
``buckets.py``, ``entity_factory.py``):

- ``GET /gateway/bot`` gives the Gateway URL, the shard count and the
  ``session_start_limit``; the bot connects with ``v=10&encoding=json&
  compress=zlib-stream`` and the fake answers in one zlib stream per
  connection, each payload ending in the ``00 00 ff ff`` of a sync flush,
  which is what hikari's inflater waits for.
- HELLO (op 10, ``heartbeat_interval``) comes first; IDENTIFY (op 2) with a
  wrong token is closed with 4004, with the privileged Message Content intent
  the portal did not allow with 4014; READY carries ``v``, ``user``,
  ``guilds``, ``session_id``, ``resume_gateway_url``, ``application``;
  dispatches (op 0) carry ``s``, a heartbeat (op 1) is answered by op 11;
  RESUME (op 6) replays the session's dispatches after the given ``seq`` and
  ends with RESUMED, an unknown session gets op 9 ``false``; op 7 and op 9 are
  sent on request.
- REST answers carry ``X-RateLimit-Limit``, ``-Remaining``, ``-Reset``,
  ``-Reset-After``, ``-Bucket``; a rate-limited route answers 429 with
  ``{"message", "retry_after", "global"}``, ``Retry-After`` and
  ``X-RateLimit-Scope``, and hikari waits ``retry_after`` and tries again. A
  wrong token is 401; a message over 2000 characters is 400 (code 50035).
  ``GET /channels/{id}/messages?after=`` answers newest first, as Discord
  does (hikari turns each page around). A message with a file is
  ``multipart/form-data``: its JSON in ``payload_json``, the file in
  ``files[0]``; more than 10 MiB is 413 (code 40005).
- ``MESSAGE_CREATE`` as Discord sends it: ``author``, ``content``,
  ``mentions``, ``attachments`` (``url`` on the CDN, ``content_type``,
  ``size``), ``guild_id`` and ``member`` in a guild, type 19 with
  ``message_reference`` and ``referenced_message`` for a reply; a thread is
  a channel of its own whose ``GET /channels/{id}`` says type 11 and
  ``parent_id``.

What it leaves out: guilds in READY and GUILD_CREATE (the bot keeps no guild
cache, so reads none), sharding beyond one shard, zstd, interactions and
slash commands, voice, and the global rate limit.
"""

from __future__ import annotations

import pytest

from butler.channels.base import ChannelError, Misconfigured
from butler.channels.discord import DiscordChannel
from butler.channels.message import AttachmentRef
from butler.config.channels import DiscordSettings
from tests.channels.chats import discord_said as said
from tests.channels.chats import discord_started as started
from tests.channels.chats import discord_switchboard
from tests.channels.conftest import write_roster
from tests.fakes.discord_api import ALICE, BOT_ID, GENERAL, THREAD, TOKEN, FakeDiscord
from tests.helpers import eventually

#: Each answer runs the command runtime: a real process.
pytestmark = pytest.mark.slow


def channel_of(discord: FakeDiscord, **settings: object) -> DiscordChannel:
    return DiscordChannel(
        DiscordSettings(
            api_url=f"{discord.url}/api/v10", attachment_hosts=["127.0.0.1"], **settings
        )
    )


async def test_a_person_paired_on_discord_asks_in_a_direct_message_and_the_answer_pings_nobody(
    roster, schema_name, discord, start_roster
):
    running = await started(roster, schema_name, discord, start_roster)

    asked = discord.say("/health what is due today? @everyone")
    answer = (await said(discord, ALICE.dm, 2))[1]

    assert answer == "[health] health heard: what is due today? @everyone"
    created = discord.created[-1]
    assert created["allowed_mentions"] == {"parse": []}  # no @everyone, role or user pinged
    assert created["message_reference"]["message_id"] == asked
    assert ALICE.dm in discord.typing
    session = (await running.sessions())[-1]
    assert session["metadata"]["sender"] == ALICE.id
    assert 1 in discord.received  # hikari kept the session alive with heartbeats


async def test_a_file_a_session_sends_is_attached_to_a_message_in_the_discord_chat(
    roster, schema_name, discord, start_roster, serve_tools
):
    plan = b"\x89PNG\r\n\x1a\n" + bytes(range(100))
    folders = write_roster(roster, schema_name)
    (folders["health"] / "plan.png").write_bytes(plan)
    discord_switchboard(roster, discord)
    running = await start_roster({"DISCORD_BOT_TOKEN": TOKEN})
    await serve_tools(running)
    await eventually(lambda: running.state("discord")["status"] == "connected")
    discord.say(await running.pair("discord"))
    await said(discord, ALICE.dm, 1)

    asked = discord.say("/health SEND plan.png")
    with_file, answer = (await said(discord, ALICE.dm, 3))[1:]

    assert with_file == "plan.png, as asked"
    assert answer.endswith(f"sent plan.png (image/png, {len(plan)} bytes) to the discord chat")
    [created] = [c for c in discord.created if c.get("files")]
    [file] = created["files"]
    assert (file["filename"], file["content_type"], file["data"]) == ("plan.png", "image/png", plan)
    assert created["message_reference"]["message_id"] == asked
    assert created["allowed_mentions"] == {"parse": []}


async def test_commands_on_discord_are_answered_by_the_daemon_without_a_session(
    roster, schema_name, discord, start_roster
):
    running = await started(roster, schema_name, discord, start_roster)

    discord.say("/help")
    helped = (await said(discord, ALICE.dm, 2))[1]
    discord.say("/stop")
    stopped = (await said(discord, ALICE.dm, 3))[2]

    assert "/pair – pair again with a new code from the owner: /pair CODE" in helped
    assert stopped == "Nothing to stop: no answer is being written in this conversation."
    assert await running.sessions() == []


async def test_a_message_in_a_discord_thread_is_answered_there_and_a_reply_continues_it(
    roster, schema_name, discord, start_roster
):
    running = await started(roster, schema_name, discord, start_roster)

    discord.say(f"<@{BOT_ID}> /health what is due today?", channel=THREAD)
    first = (await said(discord, THREAD, 1))[0]
    discord.say("and tomorrow?", channel=THREAD, reply_to=discord.created[-1]["id"])
    second = (await said(discord, THREAD, 2))[1]

    assert first == "[health] health heard: what is due today?"
    assert second == "[health] health heard: and tomorrow?\nearlier turns: 2"
    sessions = await running.sessions()
    assert len({s["metadata"]["conversation_id"] for s in sessions}) == 1
    assert sessions[0]["metadata"]["chat"] == GENERAL
    assert sessions[0]["metadata"]["thread"] == THREAD


async def test_a_reconnect_resumes_and_an_invalid_session_identifies_again_losing_nothing(
    roster, schema_name, discord, start_roster
):
    running = await started(roster, schema_name, discord, start_roster)

    discord.reconnect()  # op 7: written while the bot reconnects, replayed by the resume
    discord.say("/health said during the reconnect")
    assert (await said(discord, ALICE.dm, 2))[1].endswith("said during the reconnect")
    discord.invalidate(resumable=False)  # op 9: a new session
    await discord.until(lambda: discord.identified == 2)
    discord.say("/health said after a new session")
    answer = (await said(discord, ALICE.dm, 3))[2]

    assert answer.startswith("[health] health heard: said after a new session")
    assert discord.resumed == 1
    # hikari kept the Gateway; the service never saw the channel go.
    assert running.state("discord")["reconnects"] == 0
    assert len([s for s in await running.sessions() if s["type"] == "channel"]) == 2


async def test_a_rate_limited_reply_waits_out_retry_after_and_is_sent_once(discord):
    channel = channel_of(discord)
    try:
        await channel.connect(TOKEN, None)
        discord.say("hello")
        message = (await channel.receive()).messages[0]
        discord.rate_limit("POST /messages", times=1, retry_after=0.5)
        sent = await channel.send(message, "answer")
    finally:
        await channel.close()

    assert discord.limited == ["POST /messages"]
    assert discord.texts(ALICE.dm) == ["answer"]
    assert sent == f"{ALICE.dm}:{discord.created[0]['id']}"


async def test_an_attachment_is_read_from_the_cdn_and_a_link_elsewhere_is_not_followed(discord):
    channel = channel_of(discord)
    notes = discord.add_file(b"Iron 65 mg at 8:00.\n", "meds.txt", None, ALICE.dm)
    try:
        await channel.connect(TOKEN, None)
        discord.say("what does it say?", attachments=[notes])
        message = (await channel.receive()).messages[0]
        data = await channel.fetch(message.attachments[0], 1024)
        elsewhere = AttachmentRef("file", "text/plain", 5, "https://example.org/meds.txt")
        with pytest.raises(ChannelError, match="not on Discord's CDN"):
            await channel.fetch(elsewhere, 1024)
    finally:
        await channel.close()

    assert data == b"Iron 65 mg at 8:00.\n"
    # No content type from Discord: taken from the file's name, then checked on the bytes.
    assert message.attachments[0].media_type == "text/plain"


@pytest.mark.parametrize(
    ("token", "content", "line"),
    [
        (
            "MTIzNDU2Nzg5MDEyMzQ1Njc4.GwRoNg.not-this-bots-token",
            False,
            "discord: the bot token was refused",
        ),
        ("not-a-token", False, "discord: the bot token is not one; expected the token of the"),
        (TOKEN, True, "discord: the Message Content intent is not enabled for this bot"),
    ],
)
async def test_a_wrong_token_or_a_disallowed_intent_is_refused_in_one_line(
    discord, token, content, line
):
    channel = channel_of(discord, message_content=content)
    try:
        with pytest.raises(Misconfigured) as refused:
            await channel.connect(token, None)
    finally:
        await channel.close()
    assert str(refused.value).startswith(line)


async def test_what_was_said_while_the_daemon_was_stopped_is_read_back_at_the_next_start(
    roster, schema_name, discord, start_roster
):
    first = await started(roster, schema_name, discord, start_roster)
    for service in first.services.values():
        await service.stop(5)
    # The Gateway keeps no backlog for a new session: only REST has this message.
    discord.say("/health said while the daemon was stopped")

    second = await start_roster({"DISCORD_BOT_TOKEN": TOKEN})
    answer = (await said(discord, ALICE.dm, 2))[1]

    assert answer == "[health] health heard: said while the daemon was stopped"
    assert discord.identified == 2 and discord.resumed == 0
    await eventually(lambda: second.state("discord")["status"] == "connected")
    query = "SELECT body FROM channel_messages WHERE direction = 'in' ORDER BY id"
    bodies = [r["body"] for r in await second.db.fetch(query)]
    # Read back from after the last message recorded: the pairing code is not read again.
    assert len(bodies) == 2 and bodies[1] == "/health said while the daemon was stopped"
