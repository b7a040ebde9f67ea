"""Claude Code's output as typed events: its ``stream-json`` objects, parsed purely.

The same objects are what ``claude -p --output-format stream-json`` prints,
what the claude-agent-sdk decodes into typed messages (:func:`message_dict`
turns those back) and, for ``assistant`` and ``user`` lines, what Claude
Code writes to its transcripts, so one parser serves all three.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from butler.runtimes.base import Usage
from butler.runtimes.events import (
    Answer,
    Cost,
    Ended,
    Event,
    Failure,
    Model,
    SessionId,
    Started,
    Text,
    Tokens,
    ToolFailed,
    ToolStarted,
    Turns,
    as_int,
    bare_name,
    mapping,
)
from butler.runtimes.fold import Fold


def parse_event(event: dict[str, Any], server: str | None = None) -> list[Event]:
    """One stream-json object as typed events (pure)."""
    kind = event.get("type")
    if kind == "system" and event.get("subtype") == "init":
        found: list[Event] = [Started()]
        if event.get("session_id"):
            found.append(SessionId(str(event["session_id"])))
        return found
    message = mapping(event.get("message"))
    if kind == "assistant":
        return _assistant(message, server)
    if kind == "user" and isinstance(message.get("content"), list):
        return [_tool_failed(block) for block in message["content"] if _is_error_result(block)]
    if kind == "result":
        return _result(event)
    return []


#: The model Claude Code names on a message it wrote itself (an API error's text), no model's.
SYNTHETIC_MODEL = "<synthetic>"


def _assistant(message: dict[str, Any], server: str | None) -> list[Event]:
    found: list[Event] = []
    model = message.get("model")
    if isinstance(model, str) and model and model != SYNTHETIC_MODEL:
        found.append(Model(model))
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        block = mapping(block)
        if block.get("type") == "text" and str(block.get("text") or "").strip():
            found.append(Text(str(block["text"])))
        elif block.get("type") == "tool_use":
            name = bare_name(str(block.get("name") or "?"), f"mcp__{server}__" if server else None)
            call_id = str(block["id"]) if block.get("id") else None
            found.append(ToolStarted(name, mapping(block.get("input")), call_id))
    return found


def _is_error_result(block: Any) -> bool:
    is_result = isinstance(block, dict) and block.get("type") == "tool_result"
    return is_result and bool(block.get("is_error"))


def _tool_failed(block: dict[str, Any]) -> ToolFailed:
    content = block.get("content")
    text = content if isinstance(content, str) else "tool error"
    return ToolFailed(str(block.get("tool_use_id")), text[:500])


def _result(event: dict[str, Any]) -> list[Event]:
    usage = mapping(event.get("usage"))
    found: list[Event] = [
        Ended(),
        Tokens(
            Usage(
                input_tokens=as_int(usage.get("input_tokens")),
                output_tokens=as_int(usage.get("output_tokens")),
                cache_read_tokens=as_int(usage.get("cache_read_input_tokens")),
                cache_write_tokens=as_int(usage.get("cache_creation_input_tokens")),
            )
        ),
    ]
    if event.get("session_id"):
        found.append(SessionId(str(event["session_id"])))
    if isinstance(event.get("total_cost_usd"), int | float):
        found.append(Cost(float(event["total_cost_usd"])))
    if isinstance(event.get("num_turns"), int):
        found.append(Turns(event["num_turns"], total=True))
    if event.get("result"):
        found.append(Answer(str(event["result"])))
    if event.get("subtype") == "error_max_turns":
        found.append(Failure(f"max turns reached ({event.get('num_turns')} turns)", replaces=True))
    elif event.get("is_error"):
        errors = event.get("errors") if isinstance(event.get("errors"), list) else []
        detail = "; ".join(str(e) for e in errors) or (event.get("result") or event.get("subtype"))
        found.append(Failure(f"runtime error: {detail}", replaces=True))
    return found


def claude_fold(server: str | None) -> Fold:
    """The fold of one Claude run: texts joined, and a run without a result failed."""
    return Fold(parse_event, server, join_texts=True, needs_end=True)


def message_dict(message: Any) -> dict[str, Any]:
    """A claude-agent-sdk message as the stream-json object it was decoded from."""
    name = type(message).__name__
    if name == "SystemMessage":
        return {**message.data, "type": "system", "subtype": message.subtype}
    if name == "ResultMessage":
        return {"type": "result", **_fields(message)}
    if name in ("AssistantMessage", "UserMessage"):
        content = message.content
        blocks = content if isinstance(content, str) else [_block(b) for b in content]
        body: dict[str, Any] = {"content": blocks}
        if getattr(message, "model", None):
            body["model"] = message.model
        return {"type": "assistant" if name == "AssistantMessage" else "user", "message": body}
    return {"type": name}


def _block(block: Any) -> dict[str, Any]:
    kinds = {"TextBlock": "text", "ToolUseBlock": "tool_use", "ToolResultBlock": "tool_result"}
    kind = kinds.get(type(block).__name__)
    if kind is None or not dataclasses.is_dataclass(block):
        return {"type": "other"}
    return {"type": kind, **_fields(block)}


def _fields(instance: Any) -> dict[str, Any]:
    """A dataclass's fields, values as they are: what :func:`parse_event` reads of a
    result or block is strings, numbers and the CLI's own dicts and lists, which
    ``dataclasses.asdict`` would deep-copy (most of this module's CPU per message)."""
    return {field.name: getattr(instance, field.name) for field in dataclasses.fields(instance)}
