"""The command line's MCP client against servers that misbehave: one line, never a traceback.

The well-behaved server is the real daemon (tests/test_cli_sessions.py); here a
plain HTTP server on 127.0.0.1 answers each request with what a test scripts.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import ClassVar

import pytest

from butler import mcp_http
from butler.mcp_http import McpError, ToolFailed, call_tool

INIT = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}'


class Scripted(http.server.BaseHTTPRequestHandler):
    """Answers the Nth POST with ``answers[N]``: (status, content type, body)."""

    answers: ClassVar[list[tuple[int, str, bytes]]] = []
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, kind, body = self.answers.pop(0) if self.answers else (202, "text/plain", b"")
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        if status == 200 and not self.headers.get("mcp-session-id"):
            self.send_header("mcp-session-id", "s1")
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    httpd.shutdown()
    httpd.server_close()


def sse(*events: bytes) -> tuple[int, str, bytes]:
    return (
        200,
        "text/event-stream",
        b"".join(b"event: message\ndata: " + e + b"\n\n" for e in events),
    )


def call(url: str, *answers: tuple[int, str, bytes], **kw: object) -> object:
    Scripted.answers = [sse(INIT), (202, "text/plain", b""), *answers]
    return call_tool(url, "status", {}, token="t", timeout=5, **kw)  # type: ignore[arg-type]


def test_a_result_and_its_progress_are_read_from_the_stream(server):
    seen = []
    progress = b'{"jsonrpc":"2.0","method":"notifications/progress","params":'
    progress += b'{"progressToken":1,"progress":1,"message":"running"}}'
    result = b'{"jsonrpc":"2.0","id":2,"result":{"structuredContent":{"result":{"ok":true}}}}'
    found = call(server, sse(progress, result), progress=lambda *a: seen.append(a))
    assert found == {"ok": True}
    assert seen == [(1, None, "running")]


def test_a_tool_error_is_its_own_words(server):
    failed = b'{"jsonrpc":"2.0","id":2,"result":{"isError":true,'
    failed += b'"content":[{"type":"text","text":"queue full"}]}}'
    with pytest.raises(ToolFailed, match=r"^queue full$"):
        call(server, sse(failed))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (sse(b"not json"), "the server sent a message that is not JSON"),
        (sse(b"[1, 2]"), "the server sent a message that is not a JSON object"),
        (sse(), "tools/call: the server closed the stream without an answer"),
        ((500, "text/plain", b"boom\n" * 1000), "HTTP 500: boom"),
        (
            (200, "application/json", b'{"jsonrpc":"2.0","id":2,"error":{"message":"no"}}'),
            "tools/call: no",
        ),
    ],
)
def test_a_server_out_of_protocol_is_one_line(server, answer, message):
    with pytest.raises(McpError) as raised:
        call(server, answer)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)
    assert len(str(raised.value)) < 400


def test_an_event_over_the_bound_is_refused(server, monkeypatch):
    monkeypatch.setattr(mcp_http, "MAX_MESSAGE_BYTES", 1000)
    with pytest.raises(McpError, match="an event of more than 1000 bytes"):
        call(server, sse(b'{"pad": "' + b"x" * 5000 + b'"}'))


def test_a_closed_port_is_cannot_reach():
    with pytest.raises(McpError, match=r"^cannot reach 127\.0\.0\.1:9: ") as raised:
        call_tool("http://127.0.0.1:9/mcp", "status", {}, token="t", timeout=5)
    assert raised.value.status is None
