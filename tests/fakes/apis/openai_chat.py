"""OpenAI chat completions, as OpenCode (@ai-sdk/openai-compatible) and Copilot call it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from starlette.responses import Response

from tests.fakes.apis.base import SSE_MEDIA_TYPE, garbage_response, json_response, sse_response
from tests.fakes.apis.openai_common import openai_error
from tests.fakes.script import USAGE, JsonObject, OfferedTool, arguments_json


def _usage() -> JsonObject:
    return {
        "prompt_tokens": USAGE.input_tokens,
        "completion_tokens": USAGE.output_tokens,
        "total_tokens": USAGE.total_tokens,
        "prompt_tokens_details": {"cached_tokens": USAGE.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


class OpenAIChat:
    """`POST /v1/chat/completions` (or `/chat/completions`), `data:` chunks when streamed."""

    name = "openai-chat"
    paths: Sequence[str] = ("/v1/chat/completions", "/chat/completions")

    def side_reply(self, path: str, body: JsonObject) -> Response | None:
        """Every chat request is an agent turn."""
        return None

    def tool_results(self, body: JsonObject) -> int:
        """Count `role: tool` messages."""
        return sum(1 for message in body.get("messages") or [] if message.get("role") == "tool")

    def offered_tools(self, body: JsonObject) -> list[OfferedTool]:
        """Tools are `{"type": "function", "function": {"name", ...}}`."""
        offered: list[OfferedTool] = []
        for tool in body.get("tools") or []:
            name = (tool.get("function") or {}).get("name") or tool.get("name")
            if name:
                offered.append(OfferedTool(name))
        return offered

    def text(self, path: str, body: JsonObject, text: str) -> Response:
        """An assistant message with `content`, finish reason `stop`."""
        return self._reply(body, {"role": "assistant", "content": text}, "stop")

    def tool_call(
        self, path: str, body: JsonObject, tool: OfferedTool, args: JsonObject
    ) -> Response:
        """An assistant message with one `tool_calls` entry, finish reason `tool_calls`."""
        call = {
            "index": 0,
            "id": f"call_fake_{uuid.uuid4().hex[:16]}",
            "type": "function",
            "function": {"name": tool.name, "arguments": arguments_json(args)},
        }
        return self._reply(
            body, {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        )

    def error(self, status: int, message: str) -> Response:
        """OpenAI's error object."""
        return openai_error(status, message)

    def garbage(self, path: str, body: JsonObject) -> Response:
        """Unparseable body with the media type the client asked for."""
        return garbage_response(SSE_MEDIA_TYPE if body.get("stream") else "application/json")

    def _reply(self, body: JsonObject, message: JsonObject, finish_reason: str) -> Response:
        head = {
            "id": f"chatcmpl-fake-{uuid.uuid4().hex[:16]}",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "system_fingerprint": None,
        }
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish_reason}
            return json_response(
                {**head, "object": "chat.completion", "choices": [choice], "usage": _usage()}
            )
        return sse_response(self._chunks(head, message, finish_reason))

    def _chunks(
        self, head: JsonObject, message: JsonObject, finish_reason: str
    ) -> list[tuple[str | None, Any]]:
        def chunk(choices: list[JsonObject], **extra: Any) -> tuple[None, JsonObject]:
            return None, {**head, "object": "chat.completion.chunk", "choices": choices, **extra}

        first = {"role": "assistant", "content": ""}
        delta = {
            key: value for key, value in message.items() if key != "role" and value is not None
        }
        return [
            chunk([{"index": 0, "delta": first, "finish_reason": None}]),
            chunk([{"index": 0, "delta": delta, "finish_reason": None}]),
            chunk([{"index": 0, "delta": {}, "finish_reason": finish_reason}]),
            # Usage rides in its own choice-less chunk, as with
            # `stream_options.include_usage`; clients that did not ask ignore it.
            chunk([], usage=_usage()),
            (None, "[DONE]"),
        ]
