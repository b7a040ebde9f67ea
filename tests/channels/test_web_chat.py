"""The web chat's conversations over real PostgreSQL and the spawner, with an in-process runtime.

Conversations like any channel's: recorded in ``conversations``, each follow-up
resuming the conversation's last session; a message sent twice answered once;
``/stop`` ending what runs and what waits; answers a stopped daemon left
unrecorded taken from the sessions' rows at the next start.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
import uvicorn
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from butler.channels import web
from butler.channels.web import STOPPED, NotFound, WebChat
from butler.channels.web_message import WebMessage
from butler.context import ButlerContext
from butler.runtimes.base import RuntimeResult
from butler.server import build_app
from butler.spawner.request import TriggerRequest
from butler.store.conversations import ConversationStore, MessageRecord
from butler.store.state import StateStore
from butler.store.tenants import in_scope, tenant_of
from tests.fakes.runtime import FakeAdapter
from tests.helpers import eventually

pytestmark = pytest.mark.slow


def web_chat(spawner) -> WebChat:
    store = ConversationStore(spawner.sessions.db)
    return WebChat("tester", "Tests things.", spawner, store, spawner.sessions)


def message(text: str, conversation: uuid.UUID | None = None, id: str | None = None) -> WebMessage:
    return WebMessage(id or str(uuid.uuid4()), text, conversation)


async def answered(chat: WebChat, sent: WebMessage):
    posted = await chat.post(sent)
    await posted.turn.task
    return posted


async def test_a_follow_up_resumes_the_conversations_last_session(make_spawner):
    adapter = FakeAdapter()
    spawner = make_spawner(adapter)
    chat = web_chat(spawner)
    first = await answered(chat, message("What is due today?"))
    assert first.turn.steps[-1].data == {
        "ok": True,
        "answer": f"echo: {adapter.invocations[0].prompt}",
        "session_id": first.turn.session_id,
    }
    second = await answered(chat, message("And tomorrow?", first.conversation_id))
    assert second.conversation_id == first.conversation_id
    rows = [await spawner.sessions.get(t.session_id) for t in (first.turn, second.turn)]
    assert rows[1]["parent_session_id"] == rows[0]["id"]  # the same runtime session, resumed
    assert {(r["trigger_source"], r["type"]) for r in rows} == {("route", "channel")}
    assert rows[0]["metadata"]["conversation_id"] == str(first.conversation_id)
    assert (rows[0]["metadata"]["channel"], rows[0]["metadata"]["sender"]) == ("web", "owner")
    assert "A message from the owner" in adapter.invocations[0].prompt

    listed = await chat.conversations(10)
    assert [(c["channel"], c["messages"], c["opening"]) for c in listed] == [
        ("web", 4, "What is due today?")
    ]
    thread = await chat.thread(first.conversation_id, 50)
    assert [(m["direction"], m["status"]) for m in thread["messages"]] == [
        ("in", "answered"),
        ("out", "sent"),
    ] * 2


async def test_a_message_sent_twice_is_answered_once(make_spawner):
    adapter = FakeAdapter()
    adapter.release.clear()
    spawner = make_spawner(adapter)
    chat = web_chat(spawner)
    sent = message("Book the dentist")
    first = await chat.post(sent)
    again = await chat.post(sent)  # the browser retried after a lost answer
    assert again.turn is first.turn
    adapter.release.set()
    await first.turn.task
    assert len(adapter.invocations) == 1


async def test_stop_ends_the_session_answering_and_the_messages_waiting_behind_it(make_spawner):
    adapter = FakeAdapter()
    adapter.release.clear()
    spawner = make_spawner(adapter)
    chat = web_chat(spawner)
    first = await chat.post(message("Plan the week"))
    second = await chat.post(message("and the weekend", first.conversation_id))
    await eventually(lambda: first.turn.session_id is not None)
    status = await chat.post(message("/status", first.conversation_id))
    assert "answering this conversation" in status.reply and "1 more message(s)" in status.reply
    stopped = await chat.post(message("/stop", first.conversation_id))
    assert stopped.reply.startswith("Stopped")
    await asyncio.gather(first.turn.task, second.turn.task)
    for turn in (first.turn, second.turn):
        assert turn.steps[-1].data["ok"] is False
        assert STOPPED in turn.steps[-1].data["answer"]
    row = await spawner.sessions.get(first.turn.session_id)
    assert (row["status"], row["error"]) == ("cancelled", STOPPED)
    assert second.turn.session_id is None and len(adapter.invocations) == 1
    assert (await chat.post(message("/stop", first.conversation_id))).reply.startswith("Nothing")


async def test_answers_a_stopped_daemon_left_unrecorded_are_recorded_at_the_next_start(
    make_spawner,
):
    spawner = make_spawner()
    store = ConversationStore(spawner.sessions.db)
    done = await spawner.trigger(TriggerRequest("What is due today?"))
    conversation = await store.start("web", "dashboard", "t1", "owner", "tester")
    for external_id, session_id in (("m1", done.session_id), ("m2", None)):
        row = await store.record(
            MessageRecord("web", "in", external_id, "dashboard", "owner", "?", thread="t1")
        )
        await store.mark(row, "handling", conversation_id=conversation, session_id=session_id)

    chat = web_chat(spawner)  # as the first page after a restart builds it
    thread = await chat.thread(conversation, 50)
    bodies = [(m["external_id"], m["status"], m["body"]) for m in thread["messages"]]
    assert bodies == [
        ("m1", "answered", "?"),
        ("m2", "failed", "?"),
        ("m1/answer", "sent", done.output),
        (
            "m2/answer",
            "sent",
            "could not answer: the butler stopped while answering this; please send it again",
        ),
    ]
    assert await store.open_messages("web") == []


async def test_only_the_web_chats_own_conversations_can_be_continued(make_spawner):
    spawner = make_spawner()
    store = ConversationStore(spawner.sessions.db)
    chat = web_chat(spawner)
    telegram = await store.start("telegram", "42", "", "42", "tester")
    with pytest.raises(NotFound):
        await chat.post(message("Show me the others", telegram))
    with pytest.raises(NotFound):
        await chat.thread(telegram, 10)
    assert await chat.conversations(10) == []


async def test_a_file_a_session_sends_back_is_offered_in_its_answer(make_spawner):
    chat: WebChat | None = None
    sent = message("Make me the week's plan as a file")

    async def makes_a_file(invocation):
        turn = chat.turn(sent.id)
        await eventually(lambda: turn.session_id)
        file_id = chat.send_file(turn.session_id, "plan.txt", "text/plain", b"Mon: iron\n")
        too_large = chat.send_file(turn.session_id, "big.pdf", "application/pdf", b"x" * (11 << 20))
        assert file_id and too_large is None
        return RuntimeResult(output="Here is the plan.")

    chat = web_chat(make_spawner(FakeAdapter(script=makes_a_file)))
    posted = await answered(chat, sent)
    assert posted.turn.steps[-1].data["answer"] == "Here is the plan."
    offered = [s.data for s in posted.turn.steps if s.kind == "file"]
    assert [(f["name"], f["media_type"], f["size"]) for f in offered] == [
        ("plan.txt", "text/plain", 10)
    ]
    assert chat.outbox.get(offered[0]["id"]).data == b"Mon: iron\n"
    assert chat.send_file(posted.turn.session_id, "late.txt", "text/plain", b"x") is None


async def test_a_session_calling_send_file_offers_its_file_in_the_web_chat_answer(make_spawner):
    """The tool, over HTTP with the session's own token, reaches the web chat's hook."""
    plan = b"day,dose\nMon,65 mg\n"

    async def calls_send_file(invocation):
        endpoint = invocation.mcp
        transport = StreamableHttpTransport(endpoint.url, headers=dict(endpoint.headers))
        async with Client(transport) as client:
            sent = await client.call_tool("send_file", {"path": "plan.csv"})
            escape = await client.call_tool(
                "send_file", {"path": "../elsewhere.csv"}, raise_on_error=False
            )
        return RuntimeResult(output=f"{sent.content[0].text}\n{escape.content[0].text}")

    spawner = make_spawner(FakeAdapter(script=calls_send_file))
    (spawner.config.config_dir / "plan.csv").write_bytes(plan)
    db = spawner.sessions.db
    butler = ButlerContext(spawner.config, db, StateStore(db), spawner.sessions, spawner)
    chat = butler.web_chat
    port = spawner.config.butler.port
    server = uvicorn.Server(uvicorn.Config(build_app(butler), port=port, log_config=None))
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started, timeout=30)
        posted = await answered(chat, message("Make me the week's plan as a file"))
    finally:
        server.should_exit = True
        await task

    answer = posted.turn.steps[-1].data["answer"].splitlines()
    assert answer[0] == f"sent plan.csv (text/csv, {len(plan)} bytes) to the web chat"
    assert answer[1].startswith("send_file: not sent: ") and "leaves its folder" in answer[1]
    [offered] = [s.data for s in posted.turn.steps if s.kind == "file"]
    assert (offered["name"], offered["media_type"]) == ("plan.csv", "text/csv")
    assert chat.outbox.get(offered["id"]).data == plan


async def test_a_conversation_holds_a_bounded_number_of_messages_waiting(make_spawner, monkeypatch):
    monkeypatch.setattr(web, "MAX_WAITING", 2)
    adapter = FakeAdapter()
    adapter.release.clear()
    chat = web_chat(make_spawner(adapter))
    first = await chat.post(message("one"))
    second = await chat.post(message("two", first.conversation_id))
    with pytest.raises(web.Busy, match="2 messages of this conversation are waiting"):
        await chat.post(message("three", first.conversation_id))
    adapter.release.set()
    await asyncio.gather(first.turn.task, second.turn.task)
    assert len(adapter.invocations) == 2


async def test_a_web_chat_session_sees_its_own_conversation_as_any_senders_does(make_spawner):
    spawner = make_spawner()
    chat = web_chat(spawner)
    first = await answered(chat, message("What is due today?"))
    again = await answered(chat, message("And tomorrow?", first.conversation_id))
    other = await answered(chat, message("/new Plan the week"))
    db = spawner.sessions.db
    tenant = await tenant_of(db, again.turn.session_id, "conversation")
    assert tenant is not None and tenant.match == {"conversation_id": str(first.conversation_id)}
    assert await in_scope(db, tenant, first.turn.session_id)
    assert not await in_scope(db, tenant, other.turn.session_id)
    owner = await tenant_of(db, again.turn.session_id, "sender")
    assert await in_scope(db, owner, other.turn.session_id)  # widened to all of the owner's
