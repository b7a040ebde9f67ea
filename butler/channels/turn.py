"""One message being answered, as it happens: what its session says and does, step by step.

A :class:`Turn` is the progress sink its session runs with (the spawner's
``progress``): it keeps each step as a numbered event, the session's status
("queued", "running"), its tool calls ("calling Bash"), the answer's text as
the runtime writes it (:class:`~butler.runtimes.base.Said`), a file the
session sends back, and at last the answer as recorded. A follower (the
browser's event stream) reads from any number on: one that reconnects picks
up where it left off, one that comes late reads it all. Everything is
bounded, for what a runtime writes is data: text past :data:`MAX_TEXT_CHARS`
is left to the recorded answer, and steps past :data:`MAX_STEPS` to the end.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from butler.channels.text import clean, one_line
from butler.runtimes.base import Said

#: Steps kept of one turn; the last place is kept for its end.
MAX_STEPS = 2000
#: Characters of the answer's text kept as it is written (the recorded answer has it all).
MAX_TEXT_CHARS = 200_000
#: The longest status or activity line.
MAX_LINE = 200
#: Progress lines about the session itself, not one of its steps.
STATUS_LINES = frozenset({"queued", "running", "runtime started"})


@dataclass(frozen=True)
class Step:
    """One thing a turn did: ``number`` counts from 1, in order."""

    number: int
    #: status, activity, text, session, file or done.
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


class Turn:
    """The steps of one message's answer, for whoever follows it."""

    def __init__(self, turn_id: str, conversation_id: uuid.UUID, thread: str = "") -> None:
        self.id = turn_id
        self.conversation_id = conversation_id
        #: The conversation's thread, as its messages are recorded.
        self.thread = thread
        self.session_id: str | None = None
        self.steps: list[Step] = []
        self.finished = False
        #: Why it was stopped (``/stop``), once it was.
        self.stopped: str | None = None
        #: The task answering the message, and the session's own once it started.
        self.task: asyncio.Task[None] | None = None
        #: Waiting for the answer before it in the conversation to end.
        self.waiting = False
        self.session: asyncio.Task[Any] | None = None
        self._text = 0
        self._bell = asyncio.Event()

    async def __call__(self, message: str) -> None:
        """Take one progress item of the session (a :data:`ProgressSink`)."""
        if isinstance(message, Said):
            self._said(message)
        elif message in STATUS_LINES:
            self._add("status", {"line": message})
        else:
            self._add("activity", {"line": one_line(message, MAX_LINE)})

    def _said(self, said: Said) -> None:
        room = MAX_TEXT_CHARS - self._text
        if room <= 0:
            return
        text = clean(str(said))[:room]
        self._text += len(text)
        self._add("text", {"text": text, "delta": said.delta})

    def started(self, session_id: str) -> None:
        """The session answering is recorded: the person can open it."""
        self.session_id = session_id
        self._add("session", {"session_id": session_id})

    def offer_file(self, file_id: str, name: str, media_type: str, size: int) -> None:
        """A file the session sends the person, kept under ``file_id`` by the chat."""
        about = {"id": file_id, "name": one_line(name, 100), "media_type": media_type}
        self._add("file", {**about, "size": size})

    def finish(self, ok: bool, answer: str, session_id: str | None) -> None:
        """The answer as recorded (or why there is none); the last step."""
        if self.finished:
            return
        self.finished = True
        self._add("done", {"ok": ok, "answer": answer, "session_id": session_id}, last=True)

    def _add(self, kind: str, data: dict[str, Any], *, last: bool = False) -> None:
        if self.finished and not last:
            return
        if len(self.steps) >= MAX_STEPS - 1 and not last:
            return  # the last place is the end's
        self.steps.append(Step(len(self.steps) + 1, kind, data))
        self._bell.set()
        self._bell = asyncio.Event()

    async def follow(self, after: int, idle_s: float) -> AsyncIterator[Step | None]:
        """Every step after number ``after``, as they come, until the end; None after
        ``idle_s`` without one (a follower's cue to say it is still there)."""
        after = max(after, 0)
        while True:
            while after < len(self.steps):
                after += 1
                yield self.steps[after - 1]
            if self.finished:
                return
            bell = self._bell
            try:
                await asyncio.wait_for(bell.wait(), idle_s)
            except TimeoutError:
                yield None
