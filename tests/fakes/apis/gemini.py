"""Gemini API (generativelanguage v1beta), as Gemini CLI calls it."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from starlette.responses import Response

from tests.fakes.apis.base import SSE_MEDIA_TYPE, garbage_response, json_response, sse_response
from tests.fakes.script import USAGE, JsonObject, OfferedTool, schema_instance

STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def _usage() -> JsonObject:
    return {
        "promptTokenCount": USAGE.input_tokens,
        "candidatesTokenCount": USAGE.output_tokens,
        "cachedContentTokenCount": USAGE.cache_read_tokens,
        "totalTokenCount": USAGE.total_tokens,
    }


def _model(path: str) -> str:
    # "/v1beta/models/gemini-2.5-pro:streamGenerateContent" -> "gemini-2.5-pro"
    return path.rsplit("/", 1)[-1].split(":", 1)[0]


def _response_schema(body: JsonObject) -> Any:
    config = body.get("generationConfig") or {}
    return config.get("responseJsonSchema") or config.get("responseSchema")


class Gemini:
    """`POST /v1beta/models/<model>:streamGenerateContent?alt=sse` and `:generateContent`."""

    name = "gemini"
    paths: Sequence[str] = ("/v1beta/models/{model_action:path}",)

    def side_reply(self, path: str, body: JsonObject) -> Response | None:
        """Token counts, and structured-output requests, bypass the script.

        Gemini CLI asks for JSON matching a schema to route between models
        and to decide who speaks next; those are not agent turns.
        """
        if path.endswith(":countTokens"):
            return json_response({"totalTokens": USAGE.input_tokens})
        schema = _response_schema(body)
        if schema is not None:
            return self._reply(path, [{"text": json.dumps(schema_instance(schema))}])
        return None

    def tool_results(self, body: JsonObject) -> int:
        """Count `functionResponse` parts across the conversation."""
        return sum(
            1
            for content in body.get("contents") or []
            for part in content.get("parts") or []
            if "functionResponse" in part
        )

    def offered_tools(self, body: JsonObject) -> list[OfferedTool]:
        """Tools are grouped in `functionDeclarations` lists."""
        return [
            OfferedTool(declaration["name"])
            for tool in body.get("tools") or []
            for declaration in tool.get("functionDeclarations") or []
            if "name" in declaration
        ]

    def text(self, path: str, body: JsonObject, text: str) -> Response:
        """One text part, finish reason `STOP`."""
        return self._reply(path, [{"text": text}])

    def tool_call(
        self, path: str, body: JsonObject, tool: OfferedTool, args: JsonObject
    ) -> Response:
        """One `functionCall` part."""
        call = {"id": f"call_fake_{uuid.uuid4().hex[:16]}", "name": tool.name, "args": args}
        return self._reply(path, [{"functionCall": call}])

    def error(self, status: int, message: str) -> Response:
        """Google's `{"error": {"code", "message", "status"}}`."""
        state = STATUS_NAMES.get(status, "UNKNOWN")
        return json_response(
            {"error": {"code": status, "message": message, "status": state}}, status=status
        )

    def garbage(self, path: str, body: JsonObject) -> Response:
        """Unparseable body with the media type the client asked for."""
        streamed = ":streamGenerateContent" in path
        return garbage_response(SSE_MEDIA_TYPE if streamed else "application/json")

    def _reply(self, path: str, parts: list[JsonObject]) -> Response:
        answer = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": _usage(),
            "modelVersion": _model(path),
            "responseId": f"fake-{uuid.uuid4().hex[:16]}",
        }
        if ":streamGenerateContent" in path:
            return sse_response([(None, answer)])
        return json_response(answer)
