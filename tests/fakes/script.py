"""Script steps for the fake model server, and what every API shares.

A script is a list of steps. Which step answers a request is derived from the
request alone (how many tool results its conversation already holds), so a
CLI that retries, or sends a side request, gets the same answer again instead
of silently advancing the script.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Text:
    """Answer with a final assistant text, ending the turn."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """Answer with a call to the offered tool named `tool` behind any prefix.

    Each CLI prefixes MCP tools its own way (`mcp__srv__state_set`,
    `mcp_srv_state_set`, `srv_state_set`, `srv-state_set`, or a `mcp__srv`
    namespace holding `state_set`), so the base name is enough; see
    `find_tool` for the exact rule. When no offered tool matches, the answer
    is a text saying so, listing what was offered.
    """

    tool: str
    args: JsonObject = field(default_factory=dict)


@dataclass(frozen=True)
class UnofferedCall:
    """Answer with a call to a tool the request does not offer.

    It is named the way the CLI names the offered tool `like` (its prefix,
    its namespace), with the base name `tool`, as a model that invents a
    tool of the same server would call it.
    """

    tool: str
    like: str = "state_set"
    args: JsonObject = field(default_factory=dict)


@dataclass(frozen=True)
class ModelError:
    """Answer with an HTTP error in the API's own error JSON shape."""

    status: int = 400
    message: str = "fake model error"


@dataclass(frozen=True)
class Hang:
    """Accept the request and never answer (released when the server stops)."""


@dataclass(frozen=True)
class Garbage:
    """Answer 200 with a body that is not a valid response for the API."""


Step = Text | ToolCall | UnofferedCall | ModelError | Hang | Garbage


@dataclass(frozen=True)
class Usage:
    """Token counts reported on every answer.

    Fixed and non-zero so tests can assert that a runtime adapter recorded
    usage from the right fields rather than defaulting to zero.
    """

    input_tokens: int = 120
    output_tokens: int = 30
    cache_read_tokens: int = 10

    @property
    def total_tokens(self) -> int:
        """Input plus output, the way the APIs report a total."""
        return self.input_tokens + self.output_tokens


USAGE = Usage()


@dataclass(frozen=True)
class OfferedTool:
    """A tool a request offers to the model.

    `namespace` is set only for Codex, which groups MCP tools under a
    `mcp__NAME` namespace and expects the call to name it again.
    """

    name: str
    namespace: str | None = None


def choose_step(script: Sequence[Step], tool_results: int) -> Step:
    """Return the step for a conversation already holding `tool_results`.

    Past the end of the script the last step repeats, so a CLI that loops
    one more time than the test planned still gets a sane answer.
    """
    return script[min(tool_results, len(script) - 1)]


def find_tool(offered: Sequence[OfferedTool], base_name: str) -> OfferedTool | None:
    """Find the offered tool whose name is `base_name` behind the least prefix.

    A prefix must end in a separator (`_`, `-`, `.`), so `set` does not pick
    `reset`; among several candidates the shortest name wins, so `set` picks
    `probe-set` over `probe_state_set`.
    """
    candidates = [
        tool
        for tool in offered
        if tool.name == base_name
        or any(tool.name.endswith(separator + base_name) for separator in "_-.")
    ]
    return min(candidates, key=lambda tool: len(tool.name), default=None)


def unoffered_tool(offered: Sequence[OfferedTool], step: UnofferedCall) -> OfferedTool | None:
    """`step.tool` named like the offered `step.like`; None when that one is not offered."""
    like = find_tool(offered, step.like)
    if like is None:
        return None
    return OfferedTool(like.name[: -len(step.like)] + step.tool, like.namespace)


def no_such_tool_text(base_name: str, offered: Sequence[OfferedTool]) -> str:
    """Say plainly that the scripted tool was not offered, and what was."""
    names = ", ".join(qualified_name(tool) for tool in offered) or "none"
    return f"[fake model] no offered tool matches {base_name!r}; offered tools: {names}"


def qualified_name(tool: OfferedTool) -> str:
    """The tool's name with its namespace, for messages."""
    return f"{tool.namespace}.{tool.name}" if tool.namespace else tool.name


def arguments_json(args: JsonObject) -> str:
    """Encode tool arguments the way the APIs carry them: a JSON string."""
    return json.dumps(args, separators=(",", ":"))


def schema_instance(schema: Any) -> Any:
    """Build a small value that satisfies a JSON schema.

    CLIs ask for structured output in side requests (Gemini's model router
    and next-speaker check); answering those from the script would make a
    scripted error or hang hit the wrong request. The first enum value is
    used, which for Gemini's next-speaker check means "user" speaks next,
    ending the turn.
    """
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        if schema.get(combinator):
            return schema_instance(schema[combinator][0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    kind = str(kind).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: schema_instance(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "fake"
