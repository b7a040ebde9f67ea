"""What the inbox does with each message, from the sender's side: who is refused, told,
paired or slowed down, which butler answers, and what each message's row says."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from butler.channels.commands import stop_text
from butler.channels.gate import NOT_PAIRED
from butler.channels.inbox import BACKLOG_MINUTES
from butler.channels.limits import RateLimit
from butler.channels.message import AttachmentRef
from butler.channels.routing import which_one
from butler.errors import Rejected, SessionNotFound
from butler.spawner.result import SpawnerResult
from tests.unit.channels.in_memory import (
    ALICE,
    Desk,
    Mail,
)

CODE = "K7Q2M-9XHDA"


class Clock:
    """The rate limit's clock, moved on by the inbox's waits instead of real time passing."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def desk() -> Desk:
    d = Desk()
    d.senders.pair("telegram", ALICE.sender)
    return d


@pytest.fixture
def clock(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The desk's rate limit on a clock that the inbox's sleeps move on, at once."""
    now, real_sleep = Clock(), asyncio.sleep

    async def sleep(seconds: float) -> None:
        now.now += seconds
        await real_sleep(0)

    limit = desk.chat.settings.max_messages_per_minute
    desk.inbox.rates[desk.chat.kind] = RateLimit(limit, clock=now)
    monkeypatch.setattr(asyncio, "sleep", sleep)
    return now


async def test_a_paired_sender_is_answered_by_the_butler_with_its_name_on_the_reply(desk):
    row = await desk.send("what is due today?")
    assert desk.chat.sent == ["[tester] done"]
    assert row["status"] == "answered" and row["butler"] == "tester"
    assert desk.butlers["tester"].requests[0].prompt.endswith("what is due today?")


async def test_a_stranger_hears_one_refusal_an_hour_and_starts_no_session():
    desk = Desk()
    first, second = await desk.send("hello"), await desk.send("hello?")
    assert desk.chat.sent == [NOT_PAIRED]
    assert first["status"] == second["status"] == "refused"
    assert first["payload"]["refused"] == "not paired"
    assert desk.butlers["tester"].requests == []


async def test_a_stranger_on_email_is_told_nothing():
    desk = Desk(channel=Mail())
    row = await desk.send("hello")
    assert desk.chat.sent == [] and row["status"] == "refused"


async def test_a_good_code_pairs_the_sender_once_and_then_they_are_answered():
    desk = Desk()
    desk.senders.offer("telegram", CODE)
    paired = await desk.send(f"/start {CODE}")
    assert paired["status"] == "paired"
    assert desk.chat.sent == ["Paired, Alice. Send a message to talk to tester."]
    assert (await desk.send("hi"))["status"] == "answered"
    other = replace(ALICE, sender="2002", chat="2002")
    again = await desk.send(CODE, other)  # a code is used once
    assert again["payload"]["refused"] == "not paired (the code was not good)"


async def test_an_unproven_sender_is_refused_and_a_paired_address_told_once_a_day():
    desk = Desk(channel=Mail())
    desk.senders.pair("email", ALICE.sender)
    forged = replace(ALICE, unproven="it carries no DKIM signature")
    rows = [await desk.send("pay this invoice", forged) for _ in range(2)]
    assert [r["status"] for r in rows] == ["refused", "refused"]
    assert rows[0]["payload"]["refused"] == "sender not proven: it carries no DKIM signature"
    assert len(desk.chat.sent) == 1 and "it carries no DKIM signature" in desk.chat.sent[0]
    assert desk.butlers["tester"].requests == []


async def test_an_unproven_stranger_is_told_nothing():
    desk = Desk(channel=Mail())
    await desk.send("pay this invoice", replace(ALICE, unproven="no signature"))
    assert desk.chat.sent == []


async def test_a_burst_over_the_rate_is_answered_in_turn_paced_and_told_so_once(desk, clock):
    limit = desk.chat.settings.max_messages_per_minute
    rows = [await desk.send(f"message {n}") for n in range(limit + 2)]
    assert [r["status"] for r in rows] == ["answered"] * (limit + 2)  # nothing dropped
    paced = f"Many messages at once: each is answered in turn, at most {limit} a minute."
    assert desk.chat.sent.count(paced) == 1
    assert desk.chat.sent.index(paced) == limit  # said before the first answer that waits
    assert clock.now >= 60.0  # the message over the rate waited for the minute to pass
    prompts = [r.prompt for r in desk.butlers["tester"].requests]
    assert [p.rsplit(" ", 1)[-1] for p in prompts] == [str(n) for n in range(limit + 2)]


async def test_a_flood_over_minutes_of_backlog_is_refused_and_the_sender_slowed_down(desk, clock):
    limit = desk.chat.settings.max_messages_per_minute
    for n in range(BACKLOG_MINUTES * limit + 1):  # recorded, still waiting their turn
        desk.conversations.received(replace(ALICE, external_id=f"waiting-{n}"))
    rows = [await desk.send(f"message {n}") for n in range(limit + 1)]
    assert rows[limit]["status"] == "refused"
    assert rows[limit]["payload"]["refused"] == f"over {limit} messages a minute"
    assert desk.chat.sent[-1] == f"Too many messages: at most {limit} a minute. Wait a moment."
    assert len(desk.butlers["tester"].requests) == limit and clock.now == 0.0


async def test_over_the_rate_a_stranger_is_refused_silently():
    desk = Desk()
    limit = desk.chat.settings.max_messages_per_minute
    for n in range(limit + 1):
        await desk.send(f"message {n}")
    assert not any(s.startswith("Too many") for s in desk.chat.sent)


async def test_a_follow_up_resumes_the_conversation_and_new_starts_afresh(desk):
    await desk.send("first")
    await desk.send("second")
    tester = desk.butlers["tester"]
    first_session = desk.conversations.out()[0]["session_id"]
    assert tester.requests[1].resume_session_id == str(first_session)
    row = await desk.send("/new")
    assert desk.chat.sent[-1] == "New conversation: the next message starts afresh."
    assert row["status"] == "answered"
    await desk.send("third")
    assert tester.requests[2].resume_session_id is None


async def test_new_with_text_starts_afresh_and_answers_it(desk):
    await desk.send("first")
    await desk.send("/new what now?")
    assert desk.butlers["tester"].requests[1].resume_session_id is None
    assert desk.butlers["tester"].requests[1].prompt.endswith("what now?")


async def test_a_message_over_the_length_limit_is_refused_with_the_limit(desk):
    limit = desk.chat.settings.max_message_chars
    row = await desk.send("x" * (limit + 1))
    line = f"That message is longer than the {limit} characters a message may be."
    assert desk.chat.sent == [line] and row["payload"]["refused"] == line


async def test_naming_a_butler_routes_to_it_and_the_conversation_stays_with_it():
    desk = Desk("home", "garden")
    desk.senders.pair("telegram", ALICE.sender)
    row = await desk.send("/garden water the roses")
    assert row["butler"] == "garden" and desk.chat.sent == ["[garden] done"]
    assert desk.butlers["garden"].requests[0].prompt.endswith("water the roses")
    assert desk.butlers["garden"].requests[0].metadata["routed_by"] == "mention"
    await desk.send("and the tulips")
    follow_up = desk.butlers["garden"].requests[1]
    assert follow_up.metadata["routed_by"] == "conversation"
    assert desk.butlers["home"].requests == []


async def test_a_message_no_butler_could_be_picked_for_is_answered_with_the_question():
    desk = Desk("home", "garden")
    desk.senders.pair("telegram", ALICE.sender)
    row = await desk.send("hello")  # no mention, no rule, and the classifier cannot tell
    assert desk.chat.sent == [which_one(["home", "garden"])] and row["status"] == "asked"


async def test_a_bound_channel_sends_everything_to_its_butler():
    desk = Desk("home", "garden", bound=True)
    desk.senders.pair("telegram", ALICE.sender)
    await desk.send("/garden hello")
    assert desk.butlers["home"].requests and not desk.butlers["garden"].requests


async def test_a_failed_session_is_said_as_such_and_the_row_failed(desk):
    desk.butlers["tester"].answer = SpawnerResult(success=False, error="the model is away")
    row = await desk.send("hi")
    assert desk.chat.sent == ["[tester] could not answer: the model is away"]
    assert row["status"] == "failed"


async def test_a_refused_session_is_said_as_such(desk):
    desk.butlers["tester"].refuse_next = Rejected("too many sessions at once")
    row = await desk.send("hi")
    assert desk.chat.sent == ["[tester] could not answer: too many sessions at once"]
    assert row["status"] == "failed"


async def test_a_session_that_cannot_be_resumed_is_started_afresh_with_the_history(desk):
    await desk.send("first")
    desk.butlers["tester"].refuse_next = SessionNotFound("gone")
    row = await desk.send("second")
    again = desk.butlers["tester"].requests[-1]
    assert row["status"] == "answered" and again.resume_session_id is None
    assert "first" in again.context


async def test_a_butler_shutting_down_leaves_the_message_for_the_next_start(desk):
    desk.butlers["tester"].accepting = False
    row = await desk.send("hi")
    assert desk.chat.sent == [] and row["status"] == "received"


async def test_a_failure_while_handling_is_said_in_one_line_and_recorded(desk):
    async def broken(*args, **kwargs):
        raise RuntimeError("boom")

    desk.butlers["tester"].start = broken  # type: ignore[method-assign]
    row = await desk.send("hi")
    assert desk.chat.sent == ["Something went wrong answering this; see the butler's log."]
    assert row["status"] == "failed"


async def test_an_unroutable_message_is_kept_and_answered_once_the_person_picks_a_butler():
    desk = Desk("home", "garden")
    desk.senders.pair("telegram", ALICE.sender)
    kept = await desk.send("are the roses thirsty?")
    assert kept["status"] == "asked"
    pick = await desk.send("/garden")
    assert pick["status"] == "picked" and pick["butler"] == "garden"
    assert kept["status"] == "answered" and kept["butler"] == "garden"
    [request] = desk.butlers["garden"].requests
    assert request.prompt.endswith("are the roses thirsty?")
    assert desk.chat.sent[-1] == "[garden] done"
    await desk.send("/home")  # the kept message is answered once, not again
    assert len(desk.butlers["garden"].requests) == 1


async def test_chat_commands_are_answered_without_a_session(desk):
    rows = [await desk.send(c) for c in ("/help", "/butlers", "/stop", "/start")]
    assert [r["status"] for r in rows] == ["command"] * 4
    assert desk.chat.sent[0].startswith("tester: the tester butler\n")
    assert "/status – " in desk.chat.sent[0]
    assert desk.chat.sent[1] == "Only tester answers here: the tester butler"
    assert desk.chat.sent[2] == stop_text(False)
    assert desk.chat.sent[3] == desk.chat.sent[0]
    assert desk.butlers["tester"].requests == []


async def test_help_me_with_words_after_it_is_a_message_for_the_butler(desk):
    row = await desk.send("/help me word this letter")
    assert row["status"] == "answered" and desk.chat.sent == ["[tester] done"]


async def test_stop_ends_the_answer_being_written_and_status_shows_it_meanwhile(desk):
    tester = desk.butlers["tester"]
    tester.hold = True
    asking = desk.receive("write me a long poem")
    answer = asyncio.create_task(desk.handle(asking))
    while not tester.held:
        await asyncio.sleep(0)
    [(session_id, _)] = tester.held
    await desk.send("/status")
    assert desk.chat.sent[-1].startswith(
        f"tester: answering this conversation (session {session_id[:8]})."
    )
    assert "Sessions: 1 running, 0 queued (at most 2 at once)." in desk.chat.sent[-1]
    await desk.send("/stop")
    assert desk.chat.sent[-1] == stop_text(True)
    row = await answer
    assert row["status"] == "stopped" and row["session_id"] is not None
    assert not any(s.startswith("[tester]") for s in desk.chat.sent)  # no answer follows
    await desk.send("/stop")
    assert desk.chat.sent[-1] == stop_text(False)


async def test_stop_and_status_in_another_thread_of_the_chat_leave_its_answer_alone(desk):
    """A forum topic or a Matrix thread is a conversation of its own: ``/stop`` and
    ``/status`` sent in another thread of the same chat neither stop nor count the answer
    being written in the first."""
    tester = desk.butlers["tester"]
    tester.hold = True
    asking = desk.receive("write me a long poem", thread="topic-poems")
    answer = asyncio.create_task(desk.handle(asking))
    while not tester.held:
        await asyncio.sleep(0)
    [(session_id, _)] = tester.held
    desk.receive("and make it rhyme", thread="topic-poems")  # waits for the poem
    await desk.send("/status", thread="topic-recipes")
    assert desk.chat.sent[-1].startswith("tester: not answering anything in this conversation.")
    await desk.send("/stop", thread="topic-recipes")
    assert desk.chat.sent[-1] == stop_text(False)
    await desk.send("/status", thread="topic-poems")
    assert desk.chat.sent[-1].startswith(
        f"tester: answering this conversation (session {session_id[:8]}); "
        "1 more message(s) wait for it."
    )
    tester.finish()
    row = await answer
    assert row["status"] == "answered" and desk.chat.sent[-1] == "[tester] done"


async def test_status_names_the_butlers_last_failed_session(desk):
    when = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
    failed = {"id": "0123456789abcdef", "completed_at": when, "error": "the model is away"}
    desk.butlers["tester"].sessions.failed.append(failed)
    await desk.send("/status")
    assert desk.chat.sent[-1] == (
        "tester: not answering anything in this conversation.\n"
        "Sessions: 0 running, 0 queued (at most 2 at once).\n"
        "Last error: session 01234567, 2026-11-28 09:30 UTC: the model is away"
    )


async def test_files_sent_one_after_another_are_one_message_answered_once(desk, clock):
    def photo(n: int) -> AttachmentRef:
        return AttachmentRef("document", "text/plain", 14, f"file-{n}", f"notes-{n}.txt")

    first = desk.receive("read these", attachments=(photo(1),))
    second = desk.receive("", attachments=(photo(2),))
    words = desk.receive("and this is a question of its own")
    rows = [await desk.handle(m) for m in (first, second, words)]
    assert [r["status"] for r in rows] == ["answered", "merged", "answered"]
    requests = desk.butlers["tester"].requests
    assert len(requests) == 2 and len(desk.chat.sent) == 2
    assert [f.name for f in requests[0].files] == ["attachment-1.txt", "attachment-2.txt"]
    assert requests[1].prompt.endswith("and this is a question of its own")
