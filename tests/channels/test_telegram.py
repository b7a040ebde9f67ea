"""The roster's single Telegram bot: pairing, routing, threads, splitting, attachments.

python-telegram-bot talks to the fake Bot API over real HTTP; every answer is
a real session of the ``command`` runtime recorded in PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.channels.chats import telegram_answer_to as answer_to
from tests.channels.chats import telegram_paired as paired
from tests.channels.conftest import replies, switchboard_toml, write_roster
from tests.fakes.telegram_api import ALICE, FAMILY, MALLORY
from tests.fakes.transcription_api import KEY as TRANSCRIPTION_KEY
from tests.fakes.transcription_api import FakeTranscription
from tests.helpers import eventually

#: Each answer runs the command runtime: a real process.
pytestmark = pytest.mark.slow

GATED = (
    '\n[butler.env]\noptional = ["AGENT_GATE"]\n\n[butler.channels]\nsender_env = ["AGENT_GATE"]\n'
)
RULES = """
[[switchboard.rules]]
butler = "general"
keywords = ["groceries"]
"""


async def test_an_unpaired_sender_gets_one_short_refusal_and_no_session(
    roster, schema_name, telegram, start_roster, caplog
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    telegram.send("what is due today?", user=MALLORY)
    telegram.send("hello? anyone?", user=MALLORY)
    telegram.send("LET ME IN", user=MALLORY)

    async def refused() -> bool:
        rows = await running.db.fetch("SELECT status FROM channel_messages WHERE direction = 'in'")
        return [r["status"] for r in rows] == ["refused"] * 3

    await eventually(refused)  # all three were read, and answered as far as they will be
    await eventually(lambda: len(telegram.texts(MALLORY.id)) >= 1)
    assert telegram.texts(MALLORY.id) == [
        "This bot answers only people paired with it; ask its owner for a pairing code."
    ]
    assert await running.sessions() == []
    ignored = [
        r for r in caplog.records if r.getMessage() == "message from an unpaired sender ignored"
    ]
    assert len(ignored) == 3 and {r.sender for r in ignored} == {str(MALLORY.id)}
    assert "LET ME IN" not in caplog.text  # a stranger's words never reach the log


async def test_a_pairing_code_pairs_the_one_sender_who_sends_it_once(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    code = await running.pair("telegram")
    telegram.send(code.lower(), user=ALICE)  # typed on a phone: case does not matter
    greeting = (await replies(telegram, ALICE.id, 1))[0]
    assert greeting.startswith("Paired, Alice.")
    telegram.send(code, user=MALLORY)  # the same code again pairs nobody
    await replies(telegram, MALLORY.id, 1)
    paired = await running.senders.senders("telegram")
    assert [(p["sender"], p["display_name"]) for p in paired] == [(str(ALICE.id), "Alice")]
    assert await running.sessions() == []


async def test_what_is_due_today_reaches_the_health_butler_and_comes_back_labelled(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    reply = await answer_to(telegram, "what is due today?")

    assert reply == "[health] health heard: what is due today?"
    classify, session = await running.sessions()
    assert classify["type"] == "classify" and classify["trigger_source"] == "route"
    assert classify["output"].strip() == "health"
    assert session["trigger_source"] == "route" and session["status"] == "succeeded"
    meta = session["metadata"]
    assert meta["channel"] == "telegram" and meta["sender"] == str(ALICE.id)
    assert meta["thread"] == str(ALICE.id) and meta["routed_by"] == "classifier"
    # The person's words are the prompt; the system prompt is still the butler's own file.
    assert session["prompt"].endswith("\n\nwhat is due today?")
    assert any(a["chat_id"] == ALICE.id and a["action"] == "typing" for a in telegram.actions)


async def test_a_butler_named_or_a_rule_decides_without_a_classification_session(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram, RULES)
    running = await start_roster()
    await paired(running, telegram)

    assert await answer_to(telegram, "/general what is due today?") == (
        "[general] general heard: what is due today?"
    )
    await answer_to(telegram, "/new")
    assert await answer_to(telegram, "@health: buy groceries") == (
        "[health] health heard: buy groceries"
    )
    await answer_to(telegram, "/new")
    assert await answer_to(telegram, "we need groceries") == (
        "[general] general heard: we need groceries"
    )
    sessions = await running.sessions()
    assert [s["type"] for s in sessions] == ["channel"] * 3
    assert [s["metadata"]["routed_by"] for s in sessions] == ["mention", "mention", "rule"]


async def test_an_unclassifiable_message_asks_the_person_which_butler(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    reply = await answer_to(telegram, "hmm")

    assert reply == (
        "Which butler should answer? Send one of /general, /health and it answers this "
        "message (or start a message with one)."
    )
    assert [s["type"] for s in await running.sessions()] == ["classify"]


async def test_an_unroutable_message_is_kept_and_answered_once_the_person_picks_a_butler(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    await answer_to(telegram, "hmm, is the thing on friday?")
    picked = await answer_to(telegram, "/health")

    assert picked == "[health] health heard: hmm, is the thing on friday?"
    sessions = await running.sessions()
    assert [s["type"] for s in sessions] == ["classify", "channel"]
    assert sessions[1]["metadata"]["routed_by"] == "picked"
    statuses = await running.db.fetch(
        "SELECT status FROM channel_messages WHERE direction = 'in' ORDER BY id"
    )
    assert [r["status"] for r in statuses] == ["paired", "answered", "picked"]


async def test_chat_commands_are_answered_by_the_daemon_without_a_session(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    helped = await answer_to(telegram, "/start")  # Telegram's Start button: the help
    butlers = await answer_to(telegram, "/butlers")
    status = await answer_to(telegram, "/status")
    code = await running.pair("telegram")
    repaired = await answer_to(telegram, f"/pair {code}")
    again = await answer_to(telegram, f"/pair {code}")

    assert "/health – Medications, doses, appointments and what is due today." in helped
    assert "/stop – stop the answer being written in this conversation" in helped
    assert butlers.splitlines()[:3] == [
        "Butlers that answer here:",
        "/general – Shopping lists, errands and everything else.",
        "/health – Medications, doses, appointments and what is due today.",
    ]
    assert status.startswith("general: not answering anything in this conversation.\nSessions:")
    assert repaired == "Paired again with the new code."
    assert again.startswith("That code is not good")
    assert await running.sessions() == []  # no session was started for any of them


async def test_stop_ends_the_answer_being_written_and_status_shows_it_meanwhile(
    roster, schema_name, telegram, start_roster, tmp_path
):
    write_roster(roster, schema_name, {"health": GATED})
    switchboard_toml(roster, telegram)
    running = await start_roster({"AGENT_GATE": str(tmp_path / "never")})
    await paired(running, telegram)

    telegram.send("/health what is due today? WAIT", user=ALICE)

    async def session_running() -> bool:
        found = [s for s in await running.sessions() if s["type"] == "channel"]
        return bool(found) and found[0]["status"] == "running"

    await eventually(session_running, timeout=60)
    status = await answer_to(telegram, "/status")
    stopped = await answer_to(telegram, "/stop")
    nothing = await answer_to(telegram, "/stop")

    [session] = await running.sessions()
    assert status.startswith(
        f"health: answering this conversation (session {session['id'].hex[:8]})"
    )
    assert stopped == "Stopped: the answer being written was cancelled."
    assert nothing == "Nothing to stop: no answer is being written in this conversation."

    async def ended() -> bool:
        [row] = await running.sessions()
        return row["status"] != "running"

    await eventually(ended, timeout=30)
    assert not any(t.startswith("[health]") for t in telegram.texts(ALICE.id))


async def test_a_follow_up_continues_the_conversation_and_new_starts_afresh(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    first = await answer_to(telegram, "/health what is due today?")
    follow_up = await answer_to(telegram, "and tomorrow?")
    await answer_to(telegram, "/new")
    fresh = await answer_to(telegram, "/health and tomorrow?")

    assert first == "[health] health heard: what is due today?"
    # The follow-up went to health without naming it, and was shown the earlier turns
    # (the command runtime cannot resume its own session; Claude Code resumes it).
    assert follow_up == "[health] health heard: and tomorrow?\nearlier turns: 2"
    assert fresh == "[health] health heard: and tomorrow?"
    sessions = await running.sessions()
    conversations = [s["metadata"]["conversation_id"] for s in sessions]
    assert conversations[0] == conversations[1] != conversations[2]


async def test_a_reply_to_an_earlier_answer_continues_that_answers_conversation(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    await answer_to(telegram, "/health what is due today?")
    health_answer = telegram.bot_message(ALICE.id)
    await answer_to(telegram, "/general buy milk")
    replied = await answer_to(telegram, "and tomorrow?", reply_to=health_answer)
    after = await answer_to(telegram, "and the day after?")

    # The reply went to health, though general had the chat's latest conversation, and
    # carried on health's conversation; it is the chat's current one again after it.
    assert replied == "[health] health heard: and tomorrow?\nearlier turns: 2"
    assert after == "[health] health heard: and the day after?\nearlier turns: 4"
    sessions = [s for s in await running.sessions() if s["type"] == "channel"]
    conversations = [s["metadata"]["conversation_id"] for s in sessions]
    assert conversations[0] == conversations[2] == conversations[3] != conversations[1]
    assert sent_to(telegram, ALICE.id)[-2]["reply_parameters"]["message_id"] > 0
    # health's session page links to the conversation, kept on general's dashboard.
    general = running.spawners["general"].config.mcp_base_url
    link = f"{general}/conversations/{conversations[0]}"
    assert sessions[2]["metadata"]["conversation_url"] == link


async def test_each_forum_topic_is_a_conversation_of_its_own_answered_in_its_topic(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram, f"groups = [{FAMILY.id}]\n")
    running = await start_roster()
    await paired(running, telegram)
    telegram.add_bot(FAMILY)
    topic = {"is_topic_message": True}

    telegram.send("/health what is due today?", chat=FAMILY, message_thread_id=7, **topic)
    await eventually(lambda: len(telegram.texts(FAMILY.id)) >= 1, timeout=60)
    telegram.send("/general buy milk", chat=FAMILY, message_thread_id=9, **topic)
    await eventually(lambda: len(telegram.texts(FAMILY.id)) >= 2, timeout=60)
    answer = telegram.bot_message(FAMILY.id, 0)
    telegram.send("and tomorrow?", chat=FAMILY, message_thread_id=7, reply_to=answer, **topic)
    await eventually(lambda: len(telegram.texts(FAMILY.id)) >= 3, timeout=60)

    said = sent_to(telegram, FAMILY.id)
    assert [m["text"] for m in said] == [
        "[health] health heard: what is due today?",
        "[general] general heard: buy milk",
        "[health] health heard: and tomorrow?\nearlier turns: 2",
    ]
    assert [m["message_thread_id"] for m in said] == [7, 9, 7]


def sent_to(telegram: Any, chat: int) -> list[dict[str, Any]]:
    return [m for m in telegram.sent if m["chat_id"] == chat and m["method"] == "sendMessage"]


async def test_a_long_answer_is_split_to_telegrams_limit_and_nothing_is_lost(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)

    telegram.send("/health LONG please", user=ALICE)
    pieces = (await replies(telegram, ALICE.id, 4))[1:]
    await eventually(lambda: len(telegram.texts(ALICE.id)) == 4 and not telegram.refused)

    assert all(len(piece) <= 4096 for piece in pieces)
    session = (await running.sessions())[-1]
    assert " ".join(pieces).split() == f"[health] {session['output']}".split()


async def test_a_document_is_read_by_the_runtime_and_a_video_is_refused_in_one_line(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)
    file_id = telegram.add_file(b"Iron 65 mg at 8:00.\n", "documents/meds.txt")
    document = {
        "file_id": file_id,
        "file_unique_id": "u1",
        "file_name": "../../meds.txt",
        "mime_type": "text/plain",
        "file_size": 20,
    }

    read = await answer_to(telegram, None, caption="/health what does it say?", document=document)
    video = {"file_id": "v1", "file_unique_id": "v", "width": 1, "height": 1, "duration": 1}
    refused = await answer_to(telegram, None, caption="/health and this?", video=video)

    assert read == (
        "[health] health heard: what does it say?\nattachment-1.txt says: Iron 65 mg at 8:00."
    )
    assert refused.startswith("Not accepted: a video of type application/x-telegram-video")
    sessions = await running.sessions()
    assert len(sessions) == 1
    assert sessions[0]["metadata"]["attachments"][0]["name"] == "attachment-1.txt"


async def test_an_album_is_one_message_answered_once_with_every_file(
    roster, schema_name, telegram, start_roster
):
    write_roster(roster, schema_name)
    switchboard_toml(roster, telegram)
    running = await start_roster()
    await paired(running, telegram)
    lines = ("Iron 65 mg at 8:00.", "Dentist at 15:30.", "Walk at 18:00.")
    documents = [
        {
            "file_id": telegram.add_file(f"{line}\n".encode(), f"documents/{n}.txt"),
            "file_unique_id": f"u{n}",
            "file_name": f"page{n}.txt",
            "mime_type": "text/plain",
            "file_size": len(line) + 1,
        }
        for n, line in enumerate(lines)
    ]

    album = {"media_group_id": "13579"}
    telegram.send(None, caption="/health what do these say?", document=documents[0], **album)
    telegram.send(None, document=documents[1], **album)
    telegram.send(None, document=documents[2], **album)
    [answer] = (await replies(telegram, ALICE.id, 2))[1:]

    assert answer == (
        "[health] health heard: what do these say?\n"
        "attachment-1.txt says: Iron 65 mg at 8:00.\n"
        "attachment-2.txt says: Dentist at 15:30.\n"
        "attachment-3.txt says: Walk at 18:00."
    )
    assert [s["type"] for s in await running.sessions()] == ["channel"]
    rows = await running.db.fetch("SELECT status FROM channel_messages WHERE direction = 'in'")
    assert [r["status"] for r in rows] == ["paired", "answered"]


async def test_a_voice_note_is_transcribed_before_the_session_and_the_transcript_kept(
    roster, schema_name, telegram, start_roster
):
    with FakeTranscription(says="What is due today at the pharmacy?") as api:
        write_roster(roster, schema_name)
        switchboard_toml(roster, telegram, f'transcribe_url = "{api.url}"\n')
        running = await start_roster({"TRANSCRIBE_API_KEY": TRANSCRIPTION_KEY})
        await paired(running, telegram)
        ogg = b"OggS" + bytes(60)
        voice = {
            "file_id": telegram.add_file(ogg, "voice/file_1.oga"),
            "file_unique_id": "v1",
            "duration": 2,
            "mime_type": "audio/ogg",
            "file_size": len(ogg),
        }

        answer = await answer_to(telegram, None, caption="/health", voice=voice)

    assert answer.startswith(
        "[health] health heard: Transcript of the voice note attachment-1.ogg:\n"
        "What is due today at the pharmacy?"
    )
    [request] = api.requests
    assert (request["model"], request["filename"], request["data"]) == (
        "whisper-1",
        "attachment-1.ogg",
        ogg,
    )
    [session] = await running.sessions()
    assert session["metadata"]["transcripts"] == [
        {"name": "attachment-1.ogg", "text": "What is due today at the pharmacy?", "error": None}
    ]


async def test_a_channel_bound_to_one_butler_answers_as_that_butler_alone(
    roster, schema_name, telegram, start_roster
):
    table = f'\n[butler.channels.telegram]\napi_url = "{telegram.api_url}"\npoll_timeout_s = 2\n'
    write_roster(roster, schema_name, {"health": table})
    running = await start_roster()
    await paired(running, telegram)

    assert await answer_to(telegram, "hmm") == "[health] health heard: hmm"
    second = await answer_to(telegram, "/general hi")
    assert second == "[health] health heard: /general hi\nearlier turns: 2"
    sessions = await running.sessions()
    assert [s["metadata"]["routed_by"] for s in sessions] == ["bound", "bound"]
    assert running.state("telegram")["switchboard"] is False
