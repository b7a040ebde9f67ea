"""The one fold of a runtime's events into the result the spawner records.

Every adapter parses its CLI's output with its own pure ``parse_event`` and
hands the events here: output, tool calls, the four token counts, cost,
turns, model, runtime session id and error are gathered the same way for all.
:meth:`Fold.feed` takes raw stdout lines (decoding JSON and remembering
output that is not JSON: a crashed CLI prints a stack trace, a broken model
API can make it print anything); :meth:`Fold.add` takes decoded objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from butler.runtimes.base import RuntimeResult, Said, ToolCall, Usage
from butler.runtimes.events import (
    Answer,
    Cost,
    Ended,
    Event,
    Failure,
    Model,
    Notice,
    ParseEvent,
    SessionId,
    Started,
    StepStarted,
    Text,
    Tokens,
    ToolFailed,
    ToolStarted,
    Turns,
    UnreadableStep,
)

UNREADABLE_STEP = "runtime error: the model's answer could not be parsed (empty step)"


def add_usage(a: Usage, b: Usage) -> Usage:
    """Two token counts summed, kind by kind."""
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
    )


class Fold:
    """Folds one run's events into a :class:`RuntimeResult`.

    ``join_texts``: the output is every assistant text joined (else the last
    one), unless the runtime sent an :class:`Answer`. ``needs_end``: a run
    without an :class:`Ended` event failed. ``on_failure`` is called once
    when the stream shows the run failed, for a runtime that would not end
    by itself.
    """

    def __init__(
        self,
        parse: ParseEvent,
        server: str | None = None,
        *,
        join_texts: bool = False,
        needs_end: bool = False,
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        self.parse = parse
        self.server = server
        self.join_texts = join_texts
        self.needs_end = needs_end
        self.on_failure = on_failure
        self.texts: list[str] = []
        self.message: list[str] = []
        self.answer: str | None = None
        self.calls: list[ToolCall] = []
        self.pending: dict[str, int] = {}
        self.usage = Usage()
        self.cost_usd: float | None = None
        self.num_turns: int | None = None
        self.model: str | None = None
        self.session_id: str | None = None
        self.notice: str | None = None
        self.failure: str | None = None
        self.garbage: str | None = None
        self.started = False
        self.ended = False
        self.step_output = False

    def feed(self, line: str) -> list[str]:
        """Take one stdout line; return the progress messages worth reporting, in order."""
        if not line.strip():
            return []
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            self.garbage = self.garbage or line.strip()[:200]
            return []
        return self.add(event)

    def add(self, event: dict[str, Any]) -> list[str]:
        """Fold one decoded object; return the progress messages it gave, in order."""
        found = (self.apply(item) for item in self.parse(event, self.server))
        return [message for message in found if message]

    def apply(self, event: Event) -> str | None:
        """Fold one parsed event; return a progress message, if any: a line about the
        run, or the assistant's text as :class:`~butler.runtimes.base.Said`."""
        if isinstance(event, Text | Answer | ToolStarted | ToolFailed):
            return self._content(event)
        if isinstance(event, Tokens | Cost | Turns):
            self._counts(event)
        elif isinstance(event, Started):
            first = not self.started
            self.started = True
            return "runtime started" if first else None
        elif isinstance(event, SessionId):
            self.session_id = event.value
        elif isinstance(event, Model):
            self.model = event.name[:200]  # a name, not whatever a hostile runtime sends
        elif isinstance(event, StepStarted):
            self.step_output = False
        elif isinstance(event, UnreadableStep):
            if not self.step_output:
                self._fail(UNREADABLE_STEP)
        elif isinstance(event, Notice):
            self.notice = event.message
        elif isinstance(event, Failure):
            message = event.message or f"runtime error: {self.notice or 'unknown error'}"
            self._fail(message, replaces=event.replaces)
        elif isinstance(event, Ended):
            self._flush()
            self.ended = True
        return None

    def _content(self, event: Text | Answer | ToolStarted | ToolFailed) -> str | None:
        if isinstance(event, Text):
            if not event.delta:
                self._flush()
            self.message.append(event.text)
            self.step_output = True
            return Said(event.text, event.delta)
        if isinstance(event, Answer):
            self.answer = event.text
        elif isinstance(event, ToolStarted):
            self._flush()
            self.step_output = True
            if event.call_id:
                self.pending[event.call_id] = len(self.calls)
            call = ToolCall(event.name, event.arguments, event.call_id, event.error)
            self.calls.append(call)
            return f"{event.verb} {event.name}"
        else:
            index = self.pending.pop(event.call_id, None)
            if index is not None:
                call = self.calls[index]
                self.calls[index] = ToolCall(call.name, call.arguments, call.call_id, event.error)
        return None

    def _counts(self, event: Tokens | Cost | Turns) -> None:
        if isinstance(event, Tokens):
            self.usage = event.usage if event.total else add_usage(self.usage, event.usage)
        elif isinstance(event, Cost):
            self.cost_usd = event.usd if event.total else (self.cost_usd or 0.0) + event.usd
        else:
            self.num_turns = event.count if event.total else (self.num_turns or 0) + event.count

    def _flush(self) -> None:
        text = "".join(self.message).strip()
        if text:
            self.texts.append(text)
        self.message = []

    def _fail(self, message: str, replaces: bool = False) -> None:
        first = self.failure is None
        if first or replaces:
            self.failure = message
        if first and self.on_failure is not None:
            self.on_failure()

    def output(self) -> str:
        """The session's answer: the runtime's own, else its assistant text."""
        if self.answer:
            return self.answer
        if self.join_texts:
            return "\n".join(self.texts)
        return self.texts[-1] if self.texts else ""

    def error(self) -> str | None:
        """The runtime's own failure, or a stream that never said anything sensible."""
        if self.failure:
            return self.failure
        if self.needs_end and not self.ended:
            return "runtime ended without a result"
        if self.garbage is not None and not self.texts and self.session_id is None:
            return f"runtime printed output that is not JSON: {self.garbage!r}"
        return None

    def result(self) -> RuntimeResult:
        """What was folded so far; ``error`` set when the runtime reported a failure."""
        self._flush()
        return RuntimeResult(
            output=self.output(),
            tool_calls=list(self.calls),
            usage=self.usage,
            cost_usd=self.cost_usd,
            runtime_session_id=self.session_id,
            error=self.error(),
            num_turns=self.num_turns,
            model=self.model,
        )
