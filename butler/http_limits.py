"""The HTTP body limit, said in JSON-RPC.

The MCP transports refuse a request body over their limit with a bare
``413 Request body too large`` in plain text, which a stock MCP client shows
as "Server returned an error response": the caller never learns what the
limit is. :class:`JsonRpcBodyLimit` wraps the app and rewrites that one
answer into a JSON-RPC error naming the limit; everything else passes through.
"""

from __future__ import annotations

import json

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: JSON-RPC "Invalid Request".
INVALID_REQUEST = -32600


def body_limit_error(limit: int) -> bytes:
    """The JSON-RPC error body for a request over ``limit`` bytes."""
    message = (
        f"request body over the {limit}-byte limit ({limit / 1048576:g} MiB); expected a "
        "smaller request (keep large data in files or state, and pass references)"
    )
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return json.dumps(error).encode()


class JsonRpcBodyLimit:
    """ASGI middleware: a 413 from the app becomes a JSON-RPC error that states the limit."""

    def __init__(self, app: ASGIApp, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        replaced = False

        async def send_with_limit(message: Message) -> None:
            nonlocal replaced
            if message["type"] == "http.response.start" and message["status"] == 413:
                replaced = True
                body = body_limit_error(self.limit)
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ]
                await send({"type": "http.response.start", "status": 413, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            if not replaced:  # the plain-text body of a replaced answer is dropped
                await send(message)

        await self.app(scope, receive, send_with_limit)
