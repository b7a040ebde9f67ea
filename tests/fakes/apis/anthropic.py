"""Anthropic Messages API, as Claude Code calls it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from starlette.responses import Response

from tests.fakes.apis.base import SSE_MEDIA_TYPE, garbage_response, json_response, sse_response
from tests.fakes.script import USAGE, JsonObject, OfferedTool, arguments_json

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _usage() -> JsonObject:
    return {
        "input_tokens": USAGE.input_tokens,
        "output_tokens": USAGE.output_tokens,
        "cache_read_input_tokens": USAGE.cache_read_tokens,
        "cache_creation_input_tokens": 0,
    }


def _message(body: JsonObject, content: list[JsonObject], stop_reason: str | None) -> JsonObject:
    return {
        "id": f"msg_fake_{uuid.uuid4().hex[:16]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake-model"),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _usage(),
    }


class AnthropicMessages:
    """`POST /v1/messages` (Claude Code adds `?beta=true`), SSE when streamed."""

    name = "anthropic"
    paths: Sequence[str] = ("/v1/messages", "/v1/messages/count_tokens")

    def side_reply(self, path: str, body: JsonObject) -> Response | None:
        """Token counting is a side request: answer it without the script."""
        if path.endswith("/count_tokens"):
            return json_response({"input_tokens": USAGE.input_tokens})
        return None

    def tool_results(self, body: JsonObject) -> int:
        """Count `tool_result` blocks in the user messages."""
        count = 0
        for message in body.get("messages") or []:
            content = message.get("content")
            if isinstance(content, list):
                count += sum(1 for block in content if block.get("type") == "tool_result")
        return count

    def offered_tools(self, body: JsonObject) -> list[OfferedTool]:
        """Tools are a flat list of `{name, description, input_schema}`."""
        return [OfferedTool(tool["name"]) for tool in body.get("tools") or [] if "name" in tool]

    def text(self, path: str, body: JsonObject, text: str) -> Response:
        """One text block, stop reason `end_turn`."""
        return self._reply(body, {"type": "text", "text": text}, "end_turn")

    def tool_call(
        self, path: str, body: JsonObject, tool: OfferedTool, args: JsonObject
    ) -> Response:
        """One `tool_use` block, stop reason `tool_use`."""
        block = {
            "type": "tool_use",
            "id": f"toolu_fake_{uuid.uuid4().hex[:16]}",
            "name": tool.name,
            "input": args,
        }
        return self._reply(body, block, "tool_use")

    def error(self, status: int, message: str) -> Response:
        """`{"type": "error", "error": {"type", "message"}}`."""
        kind = ERROR_TYPES.get(status, "api_error")
        return json_response(
            {"type": "error", "error": {"type": kind, "message": message}}, status=status
        )

    def garbage(self, path: str, body: JsonObject) -> Response:
        """Unparseable body with the media type the client asked for."""
        return garbage_response(SSE_MEDIA_TYPE if body.get("stream") else "application/json")

    def _reply(self, body: JsonObject, block: JsonObject, stop_reason: str) -> Response:
        if not body.get("stream"):
            return json_response(_message(body, [block], stop_reason))
        return sse_response(self._events(body, block, stop_reason))

    def _events(
        self, body: JsonObject, block: JsonObject, stop_reason: str
    ) -> list[tuple[str | None, Any]]:
        # The block opens empty and its payload follows as deltas, the way the
        # real API streams, so the CLI's delta accumulation is what gets tested.
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": arguments_json(block["input"])}
        return [
            ("message_start", {"type": "message_start", "message": _message(body, [], None)}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": start},
            ),
            ("ping", {"type": "ping"}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                    "usage": _usage(),
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
