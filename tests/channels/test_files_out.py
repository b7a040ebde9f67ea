"""Files back to the person: a session answering a chat message calls ``send_file`` and
the person receives the file's bytes in the chat they asked in.

The session is a real ``command`` runtime (tests/channels/agent.py) calling its
butler's MCP tool over HTTP with its own token; the butler's tools are served as
its daemon serves them, over the roster's running channels. The chat servers are
the suite's: the fake Telegram Bot API (multipart uploads, as Telegram takes them)
and a real Synapse (its media repository, read back through the authenticated media API).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from butler.spawner.request import TriggerRequest
from tests.channels.conftest import replies, switchboard_toml, write_roster
from tests.fakes.telegram_api import ALICE
from tests.helpers import eventually
from tests.servers.synapse import MatrixUser, Synapse

#: Each answer runs the command runtime and an MCP client: real processes.
pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(64))
NOTES = b"# Iron\n\n65 mg at 8:00, with orange juice.\n"


async def paired(running: Any, telegram: Any) -> None:
    telegram.send(await running.pair("telegram"), user=ALICE)
    await replies(telegram, ALICE.id, 1)


async def answer_to(telegram: Any, text: str) -> str:
    before = len(telegram.texts(ALICE.id))
    telegram.send(text, user=ALICE)
    return (await replies(telegram, ALICE.id, before + 1))[before]


def uploads(telegram: Any) -> list[dict[str, Any]]:
    return [m for m in telegram.sent if m["method"] in ("sendPhoto", "sendDocument")]


async def test_a_session_sends_an_image_and_a_document_back_to_the_telegram_chat_paced(
    roster, schema_name, telegram, start_roster, serve_tools
):
    folders = write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    (folders["health"] / "plan.png").write_bytes(PNG)
    (folders["health"] / "notes").mkdir()
    (folders["health"] / "notes" / "iron.md").write_bytes(NOTES)
    running = await start_roster()
    await serve_tools(running)
    await paired(running, telegram)
    telegram.flood(times=1, retry_after=1)  # the photo meets flood control first

    reply = await answer_to(telegram, "/health SEND plan.png SEND notes/iron.md")

    assert reply.splitlines()[1:] == [
        f"sent plan.png (image/png, {len(PNG)} bytes) to the telegram chat",
        f"sent iron.md (text/markdown, {len(NOTES)} bytes) to the telegram chat",
    ]
    photo, document = uploads(telegram)
    assert photo["method"] == "sendPhoto" and photo["chat_id"] == ALICE.id
    assert photo["photo"] == {"filename": "plan.png", "content": PNG}
    assert photo["caption"] == "plan.png, as asked"
    assert document["method"] == "sendDocument"
    assert document["document"] == {"filename": "iron.md", "content": NOTES}
    # Telegram's 429 is honoured as for a text: the photo went once, after the wait it named.
    assert (telegram.flooded, telegram.too_early) == (1, 0)
    # Each file is in the conversation's record beside the answer, by the session that sent it.
    out = await running.db.fetch(
        "SELECT body, attachments, session_id, butler, status FROM channel_messages"
        " WHERE direction = 'out' AND attachments <> '[]'::jsonb ORDER BY id"
    )
    assert [(r["body"], r["butler"], r["status"]) for r in out] == [
        ("plan.png, as asked", "health", "sent"),
        ("iron.md, as asked", "health", "sent"),
    ]
    session = [s for s in await running.sessions() if s["type"] == "channel"][-1]
    assert {str(r["session_id"]) for r in out} == {str(session["id"])}


async def test_a_file_outside_the_folder_a_link_or_too_large_is_refused_and_not_sent(
    roster, schema_name, telegram, start_roster, serve_tools, tmp_path
):
    folders = write_roster(roster, schema_name)
    switchboard_toml(roster, telegram, "max_attachment_bytes = 2048\n")  # the telegram table's
    secret = tmp_path / "owner-secret.txt"
    secret.write_text("the owner's secret\n")
    health = folders["health"]
    (roster / "secret.txt").write_text("beside the butler folder\n")
    os.symlink(secret, health / "link.txt")
    (health / "big.pdf").write_bytes(b"%PDF-" + b"x" * 4096)
    running = await start_roster()
    contexts = await serve_tools(running)
    await paired(running, telegram)

    reply = await answer_to(
        telegram, "/health SEND ../secret.txt SEND link.txt SEND big.pdf SEND gone.txt"
    )

    lines = reply.splitlines()[1:]
    assert len(lines) == 4, reply
    assert all(line.startswith("send_file: not sent: ") for line in lines), reply
    assert "leaves its folder" in lines[0]
    assert "link" in lines[1] and "links are not followed" in lines[1]
    assert "over 2048 bytes" in lines[2]
    assert "no such file" in lines[3]
    assert uploads(telegram) == []
    assert "the owner's secret" not in reply

    # A session nobody asked on a chat (the owner's own) is told to use notify.
    result = await running.spawners["health"].trigger(TriggerRequest("SEND plan.png"))
    assert result.success, result.error
    assert result.output.splitlines()[1] == (
        "send_file: not sent: this session was not asked on a chat channel; use notify"
    )
    assert contexts["health"].channels is None  # the switchboard's channels are general's


async def test_a_session_sends_an_image_and_a_document_into_the_matrix_room(
    roster, schema_name, synapse, start_roster, serve_tools
):
    bot, person = synapse.register("butler"), synapse.register("alice")
    room = synapse.direct_room(person, bot.user_id)
    folders = write_roster(roster, schema_name)
    (folders["health"] / "plan.png").write_bytes(PNG)
    (folders["health"] / "iron.md").write_bytes(NOTES)
    (roster / "switchboard.toml").write_text(
        '[switchboard]\nhome = "general"\n\n[switchboard.channels.matrix]\n'
        f'homeserver = "{synapse.url}"\nuser_id = "{bot.user_id}"\n'
    )
    running = await start_roster({"MATRIX_ACCESS_TOKEN": bot.token})
    await serve_tools(running)
    await eventually(lambda: joined(synapse, person, room, bot), timeout=60)
    synapse.say(person, room, await running.pair("matrix"))
    await eventually(lambda: len(said_by(synapse, person, room, bot)) >= 1, timeout=60)

    asked = synapse.say(person, room, "/health SEND plan.png SEND iron.md")
    await eventually(lambda: len(said_by(synapse, person, room, bot)) >= 4, timeout=90)

    image, document, answer = said_by(synapse, person, room, bot)[1:4]
    sent = f"sent iron.md (text/markdown, {len(NOTES)} bytes) to the matrix chat"
    assert answer["body"].endswith(sent)
    assert image["msgtype"] == "m.image" and image["filename"] == "plan.png"
    assert image["body"] == "plan.png, as asked"
    assert image["info"] == {"mimetype": "image/png", "size": len(PNG)}
    assert image["m.relates_to"] == {"m.in_reply_to": {"event_id": asked}}
    assert document["msgtype"] == "m.file" and document["filename"] == "iron.md"
    assert synapse.download(person, image["url"]) == PNG
    assert synapse.download(person, document["url"]) == NOTES


async def joined(synapse: Synapse, person: MatrixUser, room: str, bot: MatrixUser) -> bool:
    path = f"/_matrix/client/v3/rooms/{room}/joined_members"
    found = await asyncio.to_thread(synapse.call, "GET", path, None, person.token)
    return bot.user_id in found["joined"]


def said_by(synapse: Synapse, person: MatrixUser, room: str, bot: MatrixUser) -> list[dict]:
    return [m for m in synapse.messages(person, room) if m["sender"] == bot.user_id]
