"""Calling one tool of an MCP server over streamable HTTP, with the standard library.

What a command line needs of MCP is a tool call: ``initialize``, the
``initialized`` notification, ``tools/call`` (its progress notifications read
as they come), and the session closed; a command that polls makes several
calls in one session (:class:`ToolSession`). FastMCP's client does that too, but
importing it costs a command about a second of CPU (``benchmarks/cli.py``);
this module imports nothing beyond ``http.client`` and ``json``.

Whatever the server sends is data: each event and the whole answer are
bounded, and a malformed one is an :class:`McpError`, never a traceback.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

#: The protocol revision offered in the handshake (the server may answer with another).
PROTOCOL_VERSION = "2025-11-25"
#: At most this many bytes of one server-sent event or JSON answer.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

Progress = Callable[[float, float | None, str | None], None]


class McpError(Exception):
    """The server could not be reached, refused the call, or answered out of protocol."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        #: The HTTP status when the server answered with an error status.
        self.status = status


class ToolFailed(McpError):
    """The tool ran and reported an error (``isError``): its own words."""


def call_tool(
    url: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    token: str,
    timeout: float,
    progress: Progress | None = None,
) -> Any:
    """Call ``tool`` on the MCP server at ``url``; its result (``structuredContent`` if any).

    ``progress`` is called with each progress notification (progress, total,
    message) while the tool runs. A tool's own error raises :class:`ToolFailed`.
    """
    with ToolSession(url, token=token, timeout=timeout) as tools:
        return tools.call(tool, arguments, progress)


class ToolSession:
    """One MCP session over which several tools are called, one after another.

    For a command that polls (the adapter contract waits for a session to
    end): one handshake and one connection for all its calls.
    """

    def __init__(self, url: str, *, token: str, timeout: float) -> None:
        self._session = _Session(url, token, timeout)

    def __enter__(self) -> ToolSession:
        try:
            self._session.request("initialize", _initialize_params())
            self._session.notify("notifications/initialized")
        except BaseException:
            self._session.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._session.__exit__(*exc)

    def call(self, tool: str, arguments: dict[str, Any], progress: Progress | None = None) -> Any:
        """The tool's result (``structuredContent`` if any); its own error is ToolFailed."""
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if progress is not None:
            params["_meta"] = {"progressToken": 1}  # one call at a time: one token
        result = self._session.request("tools/call", params, progress)
        if not isinstance(result, dict):
            raise McpError(f"{tool}: the server's answer is not an object")
        if result.get("isError"):
            raise ToolFailed(_text_of(result) or f"{tool} failed")
        structured = result.get("structuredContent")
        if isinstance(structured, dict):
            return structured["result"] if set(structured) == {"result"} else structured
        text = _text_of(result)
        try:
            return json.loads(text)
        except ValueError:
            return {"result": text}


def _initialize_params() -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "butler-cli", "version": "1"},
    }


def _text_of(result: dict[str, Any]) -> str:
    content = result.get("content")
    if not isinstance(content, list):
        return ""
    texts = [c.get("text") for c in content if isinstance(c, dict)]
    return "\n".join(t for t in texts if isinstance(t, str))


class _Session:
    """One MCP session: a connection, the server's session id, numbered requests."""

    def __init__(self, url: str, token: str, timeout: float) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise McpError(f"{url}: expected an http(s) URL")
        kind = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self.connection = kind(parts.hostname, parts.port, timeout=timeout)
        self.path = parts.path or "/"
        self.headers = {
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        self.next_id = 0

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        if "mcp-session-id" in self.headers:
            try:  # ends the server's session at once rather than at its idle timeout
                self.connection.request("DELETE", self.path, headers=self.headers)
                self.connection.getresponse().read(MAX_MESSAGE_BYTES)
            except (OSError, http.client.HTTPException):
                pass
        self.connection.close()

    def notify(self, method: str) -> None:
        response = self._post({"jsonrpc": "2.0", "method": method})
        response.read(MAX_MESSAGE_BYTES)

    def request(self, method: str, params: dict[str, Any], progress: Progress | None = None) -> Any:
        self.next_id += 1
        wanted = self.next_id
        response = self._post({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        if method == "initialize":
            session_id = response.getheader("mcp-session-id")
            if session_id:
                self.headers["mcp-session-id"] = session_id
        try:
            return self._answer(method, wanted, response, progress)
        except (OSError, http.client.HTTPException) as exc:
            raise McpError(f"{method}: the answer broke off: {exc}") from None

    def _answer(
        self,
        method: str,
        wanted: int,
        response: http.client.HTTPResponse,
        progress: Progress | None,
    ) -> Any:
        for message in _messages(response):
            if message.get("id") == wanted:
                # The stream ends after the answer; read to its end so the
                # connection can carry the next request.
                response.read(MAX_MESSAGE_BYTES)
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    raise McpError(f"{method}: {error.get('message', 'refused')}")
                return message.get("result")
            if progress is not None and message.get("method") == "notifications/progress":
                _report(message.get("params"), progress)
        raise McpError(f"{method}: the server closed the stream without an answer")

    def _post(self, body: dict[str, Any]) -> http.client.HTTPResponse:
        try:
            self.connection.request("POST", self.path, json.dumps(body), self.headers)
            response = self.connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            where = f"{self.connection.host}:{self.connection.port}"
            raise McpError(f"cannot reach {where}: {exc}") from None
        if response.status >= 400:
            detail = " ".join(response.read(2000).decode("utf-8", "replace").split())
            raise McpError(f"HTTP {response.status}: {detail[:300]}", status=response.status)
        return response


def _report(params: Any, progress: Progress) -> None:
    if not isinstance(params, dict):
        return
    done, total, message = params.get("progress"), params.get("total"), params.get("message")
    if isinstance(done, int | float):
        total = total if isinstance(total, int | float) else None
        progress(done, total, message if isinstance(message, str) else None)


def _messages(response: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of an answer: one JSON body, or server-sent events."""
    kind = (response.getheader("content-type") or "").split(";")[0].strip()
    if kind == "application/json":
        yield _parsed(response.read(MAX_MESSAGE_BYTES + 1))
        return
    if kind != "text/event-stream":
        response.read(MAX_MESSAGE_BYTES)
        return
    data: list[bytes] = []
    size = 0
    while True:
        line = response.readline(MAX_MESSAGE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_MESSAGE_BYTES:
            raise McpError(f"an event of more than {MAX_MESSAGE_BYTES} bytes")
        line = line.rstrip(b"\r\n")
        if line.startswith(b"data:"):
            chunk = line[5:].removeprefix(b" ")
            size += len(chunk)
            if size > MAX_MESSAGE_BYTES:
                raise McpError(f"an event of more than {MAX_MESSAGE_BYTES} bytes")
            data.append(chunk)
        elif not line and data:
            yield _parsed(b"\n".join(data))
            data, size = [], 0


def _parsed(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_MESSAGE_BYTES:
        raise McpError(f"an answer of more than {MAX_MESSAGE_BYTES} bytes")
    try:
        message = json.loads(raw)
    except ValueError:
        raise McpError("the server sent a message that is not JSON") from None
    if not isinstance(message, dict):
        raise McpError("the server sent a message that is not a JSON object")
    return message
