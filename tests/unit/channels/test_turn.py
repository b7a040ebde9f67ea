"""A message's answer as it happens: steps in order, for followers that come and go, bounded."""

from __future__ import annotations

import asyncio
import uuid

from butler.channels import turn as turn_module
from butler.channels.outbox import Outbox, OutFile
from butler.channels.turn import Step, Turn
from butler.runtimes.base import Said


def steps(found: list[Step | None]) -> list[tuple[str, dict]]:
    return [(s.kind, s.data) for s in found if s is not None]


async def collect(turn: Turn, after: int, idle_s: float = 5.0) -> list[Step | None]:
    return [step async for step in turn.follow(after, idle_s)]


def test_a_follower_gets_every_step_as_it_comes_and_one_that_reconnects_the_rest():
    async def run() -> None:
        turn = Turn("m1", uuid.uuid4())
        following = asyncio.create_task(collect(turn, 0))
        await turn("queued")
        await turn("running")
        turn.started("s-1")
        await turn(Said("Let me look."))
        await turn("calling Bash")
        await turn(Said(" Found it.", delta=True))
        turn.finish(True, "Let me look. Found it.", "s-1")
        live = steps(await following)
        assert live == [
            ("status", {"line": "queued"}),
            ("status", {"line": "running"}),
            ("session", {"session_id": "s-1"}),
            ("text", {"text": "Let me look.", "delta": False}),
            ("activity", {"line": "calling Bash"}),
            ("text", {"text": " Found it.", "delta": True}),
            ("done", {"ok": True, "answer": "Let me look. Found it.", "session_id": "s-1"}),
        ]
        # A browser that saw up to step 4 (Last-Event-ID: 4) reconnects: it gets the rest.
        assert steps(await collect(turn, 4)) == live[4:]
        assert [s.number for s in turn.steps] == list(range(1, 8))

    asyncio.run(run())


def test_a_follower_waiting_long_hears_that_nothing_happened_and_nothing_comes_after_the_end():
    async def run() -> None:
        turn = Turn("m1", uuid.uuid4())
        following = turn.follow(0, idle_s=0.01)
        assert await anext(following) is None  # the stream's cue to say it is still there
        turn.finish(False, "could not answer: stopped", None)
        await turn(Said("late"))
        turn.finish(True, "again", None)
        assert steps([await anext(following)]) == [
            ("done", {"ok": False, "answer": "could not answer: stopped", "session_id": None})
        ]

    asyncio.run(run())


def test_what_a_runtime_writes_is_bounded_and_the_end_always_has_its_place(monkeypatch):
    monkeypatch.setattr(turn_module, "MAX_STEPS", 5)
    monkeypatch.setattr(turn_module, "MAX_TEXT_CHARS", 10)

    async def run() -> Turn:
        turn = Turn("m1", uuid.uuid4())
        await turn(Said("0123456789abc\x1b[31m"))
        await turn(Said("more"))
        await turn("calling " + "x" * 1000)
        for _ in range(10):
            await turn("calling Bash")
        turn.finish(True, "answer", None)
        return turn

    turn = asyncio.run(run())
    assert [s.kind for s in turn.steps] == ["text", "activity", "activity", "activity", "done"]
    assert turn.steps[0].data["text"] == "0123456789"
    assert len(turn.steps[1].data["line"]) == 200


def test_files_sent_back_are_kept_bounded_by_an_id_nobody_guesses():
    outbox = Outbox(max_bytes=10, max_files=2)
    assert outbox.put(OutFile("big.bin", "application/pdf", b"x" * 11)) is None
    first = outbox.put(OutFile("a.txt", "text/plain", b"a"))
    second = outbox.put(OutFile("b.txt", "text/plain", b"b"))
    third = outbox.put(OutFile("c.txt", "text/plain", b"c"))
    assert first and second and third and len({first, second, third}) == 3 and len(first) >= 20
    assert outbox.get(first) is None  # the oldest went
    assert outbox.get(third) == OutFile("c.txt", "text/plain", b"c")
