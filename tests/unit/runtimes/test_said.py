"""The runtime's own words reach a progress sink as it writes them; status lines stay lines."""

from __future__ import annotations

import asyncio

from butler.runtimes.base import Said
from butler.runtimes.command import TextStream
from butler.spawner.activity import Activity


def test_a_command_runtime_says_each_line_of_its_answer_as_it_prints_it() -> None:
    stream = TextStream(max_bytes=1000)
    said = [*stream.feed("Iron 65 mg"), *stream.feed("at 8:00.")]
    assert said == ["Iron 65 mg", "\nat 8:00."]
    assert [s.delta for s in said] == [False, True]
    assert "".join(said) == stream.result().output


def test_what_the_answer_cannot_keep_is_not_said_either() -> None:
    stream = TextStream(max_bytes=10)
    assert stream.feed("12345") == ["12345"]
    assert stream.feed("abcdefgh") == ["\nabcd"]  # what fits of the line that crosses it
    assert stream.feed("more") == []
    assert "bytes cut" in stream.result().output


def test_activity_keeps_status_lines_and_passes_the_answer_on_unkept() -> None:
    activity = Activity()
    heard: list[str] = []

    async def caller(message: str) -> None:
        heard.append(message)

    async def run() -> None:
        sink = activity.watch("s1", caller)
        for message in ("running", Said("Let me look."), "calling Bash", Said(" Done.", True)):
            await sink(message)

    asyncio.run(run())
    assert activity.of("s1") == ["running", "calling Bash"]  # butler logs --follow
    assert heard == ["running", "Let me look.", "calling Bash", " Done."]
    assert isinstance(heard[1], Said)
