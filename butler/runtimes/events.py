"""The typed events every runtime's output is parsed into.

An adapter's ``parse_event(event, server)`` turns one decoded JSON object of
its CLI's output (a stdout line, or a line of the CLI's own transcript) into
a list of these, with no state and no I/O. :class:`butler.runtimes.fold.Fold`
is the one place that folds them into a :class:`RuntimeResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from butler.runtimes.base import Usage


@dataclass(frozen=True)
class Started:
    """The runtime is up and working (reported once as progress)."""


@dataclass(frozen=True)
class SessionId:
    """The runtime's own session id, by which it can be resumed."""

    value: str


@dataclass(frozen=True)
class Model:
    """The model the runtime says it used."""

    name: str


@dataclass(frozen=True)
class Text:
    """Assistant text. A ``delta`` continues the message before it; otherwise it starts one."""

    text: str
    delta: bool = False


@dataclass(frozen=True)
class Answer:
    """The runtime's own final answer; it wins over the assistant texts."""

    text: str


@dataclass(frozen=True)
class ToolStarted:
    """A tool call, its name already bare for the butler's own tools."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    error: str | None = None
    #: How progress names it ("calling", "called", "ran").
    verb: str = "calling"


@dataclass(frozen=True)
class ToolFailed:
    """The tool call ``call_id`` ended with an error."""

    call_id: str
    error: str


@dataclass(frozen=True)
class Tokens:
    """Token counts: the run's running ``total`` (replaces) or one step's (adds)."""

    usage: Usage
    total: bool = True


@dataclass(frozen=True)
class Cost:
    """Cost in US dollars: the running ``total`` (replaces) or one step's (adds)."""

    usd: float
    total: bool = True


@dataclass(frozen=True)
class Turns:
    """Model turns: the ``total`` so far (replaces) or more of them (adds)."""

    count: int
    total: bool = False


@dataclass(frozen=True)
class StepStarted:
    """A new model step begins (for runtimes that report steps)."""


@dataclass(frozen=True)
class UnreadableStep:
    """A step ended that the runtime could not read; fatal if it produced nothing."""


@dataclass(frozen=True)
class Notice:
    """An error the runtime reported without failing; the detail of a later bare failure."""

    message: str


@dataclass(frozen=True)
class Failure:
    """The runtime failed. ``message`` None: the last :class:`Notice` says why.

    The first failure wins unless a later one ``replaces`` it (a final verdict).
    """

    message: str | None
    replaces: bool = False


@dataclass(frozen=True)
class Ended:
    """The runtime's final result arrived (for runtimes that always send one)."""


Event = (
    Started
    | SessionId
    | Model
    | Text
    | Answer
    | ToolStarted
    | ToolFailed
    | Tokens
    | Cost
    | Turns
    | StepStarted
    | UnreadableStep
    | Notice
    | Failure
    | Ended
)

#: An adapter's pure parser: one decoded JSON object and the butler's server name.
ParseEvent = Callable[[dict[str, Any], str | None], list[Event]]


def bare_name(name: str, prefix: str | None) -> str:
    """The butler's own tool by its bare name (``mcp_tester_state_set`` -> ``state_set``).

    Tools of anything else keep the runtime's name, so a session record says
    what really ran.
    """
    if prefix and name.startswith(prefix):
        return name[len(prefix) :]
    return name


def as_int(value: Any) -> int:
    """A token count from JSON: missing, null or malformed counts as 0."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def error_text(error: Any, default: str = "tool failed") -> str:
    """An error given as a string or as ``{"message": ...}``, cut to 500 characters."""
    message = error.get("message") if isinstance(error, dict) else error
    return str(message or default)[:500]


def mapping(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (hostile output is any shape)."""
    return value if isinstance(value, dict) else {}
