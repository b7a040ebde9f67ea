"""OpenAI Responses API, as Codex calls it."""

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
        "input_tokens": USAGE.input_tokens,
        "input_tokens_details": {"cached_tokens": USAGE.cache_read_tokens},
        "output_tokens": USAGE.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": USAGE.total_tokens,
    }


def _response(body: JsonObject, rid: str, status: str, output: list[JsonObject]) -> JsonObject:
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": body.get("model", "fake-model"),
        "output": output,
        "usage": _usage() if status == "completed" else None,
    }


class OpenAIResponses:
    """`POST /v1/responses`, streamed as typed SSE events."""

    name = "openai-responses"
    paths: Sequence[str] = ("/v1/responses", "/responses")

    def side_reply(self, path: str, body: JsonObject) -> Response | None:
        """Every Responses request is an agent turn."""
        return None

    def tool_results(self, body: JsonObject) -> int:
        """Count `*_call_output` input items (function, custom or shell calls)."""
        items = body.get("input")
        if not isinstance(items, list):
            return 0
        return sum(1 for item in items if str(item.get("type", "")).endswith("call_output"))

    def offered_tools(self, body: JsonObject) -> list[OfferedTool]:
        """Flat function tools, plus the tools inside each `namespace` group."""
        offered: list[OfferedTool] = []
        for tool in body.get("tools") or []:
            if tool.get("type") == "namespace":
                namespace = tool.get("name")
                offered += [OfferedTool(sub["name"], namespace) for sub in tool.get("tools") or []]
            elif "name" in tool:
                offered.append(OfferedTool(tool["name"]))
        return offered

    def text(self, path: str, body: JsonObject, text: str) -> Response:
        """One assistant `message` item holding `output_text`."""
        item = {
            "type": "message",
            "id": f"msg_fake_{uuid.uuid4().hex[:16]}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return self._reply(body, item, text)

    def tool_call(
        self, path: str, body: JsonObject, tool: OfferedTool, args: JsonObject
    ) -> Response:
        """One `function_call` item, carrying the namespace when there is one."""
        item: JsonObject = {
            "type": "function_call",
            "id": f"fc_fake_{uuid.uuid4().hex[:16]}",
            "status": "completed",
            "call_id": f"call_fake_{uuid.uuid4().hex[:16]}",
            "name": tool.name,
            "arguments": arguments_json(args),
        }
        if tool.namespace:
            item["namespace"] = tool.namespace
        return self._reply(body, item, None)

    def error(self, status: int, message: str) -> Response:
        """OpenAI's error object."""
        return openai_error(status, message)

    def garbage(self, path: str, body: JsonObject) -> Response:
        """Unparseable body with the media type the client asked for."""
        return garbage_response(SSE_MEDIA_TYPE if body.get("stream") else "application/json")

    def _reply(self, body: JsonObject, item: JsonObject, text: str | None) -> Response:
        rid = f"resp_fake_{uuid.uuid4().hex[:16]}"
        if not body.get("stream"):
            return json_response(_response(body, rid, "completed", [item]))
        return sse_response(self._events(body, rid, item, text))

    def _events(
        self, body: JsonObject, rid: str, item: JsonObject, text: str | None
    ) -> list[tuple[str | None, Any]]:
        # The item opens empty and fills in, as the real API streams it.
        opened = {**item, "status": "in_progress"}
        if "content" in opened:
            opened["content"] = []
        if "arguments" in opened:
            opened["arguments"] = ""
        events: list[tuple[str, JsonObject]] = [
            ("response.created", {"response": _response(body, rid, "in_progress", [])}),
            ("response.output_item.added", {"output_index": 0, "item": opened}),
        ]
        if text is not None:
            events.append(
                (
                    "response.output_text.delta",
                    {"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": text},
                )
            )
        events += [
            ("response.output_item.done", {"output_index": 0, "item": item}),
            ("response.completed", {"response": _response(body, rid, "completed", [item])}),
        ]
        # Each event repeats its name in `type`, and numbers itself, as the API does.
        return [
            (name, {"type": name, "sequence_number": number, **data})
            for number, (name, data) in enumerate(events)
        ]
