"""The contract each impersonated API fulfils, and shared response helpers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any, Protocol

from starlette.responses import JSONResponse, Response, StreamingResponse

from tests.fakes.script import JsonObject, OfferedTool

SSE_MEDIA_TYPE = "text/event-stream"


class ModelApi(Protocol):
    """How one model API reads a request and writes its answers.

    The server owns the script and picks the step; an API only translates
    between its wire format and the step.
    """

    name: str
    """Short name recorded with each request (e.g. "anthropic")."""

    paths: Sequence[str]
    """Starlette route paths served by this API (POST)."""

    def side_reply(self, path: str, body: JsonObject) -> Response | None:
        """Answer a request that is not an agent turn, or None if it is one."""
        ...

    def tool_results(self, body: JsonObject) -> int:
        """Count the tool results already in the request's conversation."""
        ...

    def offered_tools(self, body: JsonObject) -> list[OfferedTool]:
        """List the tools the request offers to the model."""
        ...

    def text(self, path: str, body: JsonObject, text: str) -> Response:
        """Answer with a final assistant text."""
        ...

    def tool_call(
        self, path: str, body: JsonObject, tool: OfferedTool, args: JsonObject
    ) -> Response:
        """Answer with one call of `tool`."""
        ...

    def error(self, status: int, message: str) -> Response:
        """Answer with an HTTP error in this API's error shape."""
        ...

    def garbage(self, path: str, body: JsonObject) -> Response:
        """Answer 200 with a body the CLI cannot parse as a valid answer."""
        ...


def sse_response(events: Iterable[tuple[str | None, JsonObject | str]]) -> Response:
    """Stream server-sent events; a None event name omits the `event:` line.

    Each event goes out as its own chunk, as a real API would send them,
    so the CLI's incremental parser is exercised.
    """
    chunks: list[bytes] = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        chunks.append(f"{head}data: {payload}\n\n".encode())

    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return StreamingResponse(
        stream(), media_type=SSE_MEDIA_TYPE, headers={"cache-control": "no-cache"}
    )


def json_response(data: Any, status: int = 200) -> Response:
    """Answer with a JSON document."""
    return JSONResponse(data, status_code=status)


def garbage_response(media_type: str) -> Response:
    """A 200 whose body looks like the expected type but parses as nothing.

    Not JSON, no SSE `data:` line: a client can neither decode an event
    nor mistake it for an empty but valid answer.
    """
    return Response(b"<html>\x00\x01 this is not a model answer {{{\n", media_type=media_type)
