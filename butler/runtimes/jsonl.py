"""What the JSON-lines stream parsers of the subprocess runtimes share.

Each runtime prints one JSON object per line, in its own schema. A subclass
of :class:`JsonLinesStream` folds one decoded event at a time; this base
decodes lines, remembers output that is not JSON (a crashed CLI prints a
stack trace, a broken model API can make it print anything), and builds the
:class:`RuntimeResult` from what the subclass collected.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Any

from butler.runtimes.base import RuntimeResult, ToolCall, Usage

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ERROR_LINE = re.compile(r"^\s*(\w*error\b|fatal\b)", re.IGNORECASE)


def stderr_summary(stderr: str) -> str:
    """The line of a CLI's stderr that says what went wrong, colours removed.

    CLIs print the error first and usage hints or stack frames after it, so
    the first line that starts like an error wins; otherwise the last lines.
    """
    lines = [_ANSI.sub("", line).strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    for line in lines:
        if _ERROR_LINE.match(line):
            return line[:800]
    return " | ".join(lines[-3:])[:800]


def exit_message(binary: str, returncode: int, stderr: str) -> str:
    """One line for a CLI that exited non-zero without saying why on stdout."""
    detail = stderr_summary(stderr)
    return f"{binary} exited with status {returncode}" + (f": {detail}" if detail else "")


def as_int(value: Any) -> int:
    """A token count from JSON: missing, null or malformed counts as 0."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def bare_name(name: str, prefix: str | None) -> str:
    """The butler's own tool by its bare name (``mcp_tester_state_set`` -> ``state_set``).

    Tools of anything else keep the runtime's name, so a session record says
    what really ran.
    """
    if prefix and name.startswith(prefix):
        return name[len(prefix) :]
    return name


class JsonLinesStream(ABC):
    """Folds a runtime's JSON-lines stdout into a result."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: list[ToolCall] = []
        self.usage = Usage()
        self.cost_usd: float | None = None
        self.session_id: str | None = None
        self.failure: str | None = None
        self.garbage: str | None = None
        self.num_turns: int | None = None

    def feed(self, line: str) -> str | None:
        """Take one stdout line; return a progress message worth reporting, if any."""
        if not line.strip():
            return None
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            self.garbage = self.garbage or line.strip()[:200]
            return None
        if not isinstance(event, dict):
            self.garbage = self.garbage or line.strip()[:200]
            return None
        return self.event(event)

    @abstractmethod
    def event(self, event: dict[str, Any]) -> str | None:
        """Fold one decoded event; return a progress message, if any."""

    def output(self) -> str:
        """The session's answer: the last assistant text."""
        return self.texts[-1] if self.texts else ""

    def error(self) -> str | None:
        """The runtime's own failure, or a stream that never said anything sensible."""
        if self.failure:
            return self.failure
        if self.garbage is not None and not self.texts and self.session_id is None:
            return f"runtime printed output that is not JSON: {self.garbage!r}"
        return None

    def result(self) -> RuntimeResult:
        """What was parsed so far; ``error`` set when the runtime reported a failure."""
        return RuntimeResult(
            output=self.output(),
            tool_calls=list(self.calls),
            usage=self.usage,
            cost_usd=self.cost_usd,
            runtime_session_id=self.session_id,
            error=self.error(),
            num_turns=self.num_turns,
        )
