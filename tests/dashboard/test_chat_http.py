"""The web chat's routes over plain HTTP, as a page on another site or a script would try them.

A message is taken only from the chat page itself (its origin and its form
token, both checked before the body is read), bounded by its declared size,
its files by the attachment rules; an answer's stream is the owner's like
every page; a turn no longer in hand tells the browser to stop (204).
"""

from __future__ import annotations

import http.client
import json
import uuid
from typing import Any

import pytest

from butler.dashboard.forms import form_token
from tests.helpers import TEST_TOKEN

pytestmark = pytest.mark.slow

BOUNDARY = "----butlerchattest"


def multipart(fields: dict[str, str], files: list[tuple[str, str, bytes]] = ()) -> bytes:
    """A multipart/form-data body, as a browser's FormData sends it."""
    parts = []
    for name, value in fields.items():
        head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
        parts.append(f"{head}{value}\r\n".encode())
    for filename, media_type, data in files:
        head = (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; '
            f'filename="{filename}"\r\nContent-Type: {media_type}\r\n\r\n'
        )
        parts.append(head.encode() + data + b"\r\n")
    return b"".join(parts) + f"--{BOUNDARY}--\r\n".encode()


def call(
    url: str,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    host = url.removeprefix("http://")
    connection = http.client.HTTPConnection(host, timeout=10)
    sent = {"Authorization": f"Bearer {TEST_TOKEN}", **(headers or {})}
    try:
        connection.request(method, path, body=body or None, headers=sent)
        response = connection.getresponse()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, response.read()
    finally:
        connection.close()


def post(butler: Any, fields: dict[str, str], files=(), **headers: str) -> tuple[int, dict]:
    body = multipart({"id": str(uuid.uuid4()), "conversation": "", **fields}, files)
    sent = {
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
        "Origin": butler.url,
        "X-Butler-Form-Token": form_token(TEST_TOKEN),
        **headers,
    }
    status, headers, answer = call(butler.url, "POST", "/chat/api/messages", body, sent)
    if headers.get("content-type") != "application/json":
        return status, {"error": answer.decode()}
    return status, json.loads(answer)


def test_what_did_not_come_from_the_chat_page_or_breaks_its_bounds_is_refused(chat_butler):
    # The Host/Origin guard in front of every route refuses it first; the chat checks again.
    status, answer = post(chat_butler, {"text": "/help"}, Origin="https://evil.example")
    assert status == 403 and "Origin" in answer["error"]
    # Another server on this machine passes that guard (any loopback origin): not the chat.
    status, answer = post(chat_butler, {"text": "/help"}, Origin="http://localhost:3000")
    assert status == 403 and "is not this dashboard" in answer["error"]
    status, answer = post(chat_butler, {"text": "/help"}, **{"X-Butler-Form-Token": "guess"})
    assert status == 403 and "form token" in answer["error"]
    status, answer = post(chat_butler, {"text": "/help"})
    assert status == 200 and "/status" in answer["reply"]
    assert chat_butler.sql("SELECT count(*) FROM channel_messages")[0][0] == 0  # commands: none

    # A body over a message's bound is refused on its declared size, before it is read.
    host = chat_butler.url.removeprefix("http://")
    connection = http.client.HTTPConnection(host, timeout=10)
    connection.putrequest("POST", "/chat/api/messages")
    for name, value in {
        "Authorization": f"Bearer {TEST_TOKEN}",
        "Origin": chat_butler.url,
        "X-Butler-Form-Token": form_token(TEST_TOKEN),
        "Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
        "Content-Length": str(200 * 1024 * 1024),
    }.items():
        connection.putheader(name, value)
    connection.endheaders()
    response = connection.getresponse()  # answered without the 200 MiB ever being sent
    assert response.status == 400
    assert "at most 40 MiB" in json.loads(response.read())["error"]
    connection.close()

    # Files by the attachment rules, text by its bound: nothing reaches a session.
    status, answer = post(chat_butler, {"text": "look"}, [("cat.png", "image/png", b"<svg/>")])
    assert status == 400 and "does not look like the image/png" in answer["error"]
    status, answer = post(chat_butler, {"text": "run"}, [("x.sh", "text/x-sh", b"id")])
    assert status == 400 and "is not accepted" in answer["error"]
    status, answer = post(chat_butler, {"text": "x" * 8001})
    assert status == 400 and "longer than the 8000 characters" in answer["error"]
    assert chat_butler.sql("SELECT count(*) FROM sessions")[0][0] == 0

    # The chat is the owner's, answers no other site, and runs only its own script.
    status, _, page = call(chat_butler.url, "GET", "/chat/", headers={"Authorization": ""})
    assert status == 401
    status, _, page = call(chat_butler.url, "GET", "/chat/")
    assert status == 200 and b'data-butler="health"' in page
    for origin in ("https://evil.example", "http://localhost:3000"):
        status, _, _ = call(
            chat_butler.url, "GET", "/chat/api/conversations", headers={"Origin": origin}
        )
        assert status == 403
    status, headers, _ = call(chat_butler.url, "GET", "/chat/")
    policy = headers["content-security-policy"]
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy
    # Another channel's conversation is not the web chat's to show or continue.
    other = chat_butler.sql(
        "INSERT INTO conversations (id, channel, chat, sender, butler)"
        " VALUES (gen_random_uuid(), 'telegram', '42', '42', 'health') RETURNING id"
    )[0]["id"]
    status, _, body = call(chat_butler.url, "GET", f"/chat/api/conversations/{other}")
    assert status == 404 and b"no conversation" in body


def test_an_answer_streams_as_server_sent_events_and_resumes_where_it_left_off(chat_butler):
    status, answer = post(chat_butler, {"text": "What is due today?"})
    assert status == 200 and answer["turn"]
    events = f"/chat/api/turns/{answer['turn']}/events"
    status, headers, body = call(chat_butler.url, "GET", events)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    assert headers["cache-control"] == "no-store"
    steps = [
        dict(line.split(": ", 1) for line in chunk.splitlines() if not line.startswith(":"))
        for chunk in body.decode().strip().split("\n\n")
    ][1:]  # the first says how soon to reconnect
    assert [s["event"] for s in steps][-1] == "done"
    said = [json.loads(s["data"])["text"] for s in steps if s["event"] == "text"]
    assert said == ["Let me look into that.", "\nYou asked: What is due today?"]
    done = json.loads(steps[-1]["data"])
    assert done["ok"] and done["answer"] == "".join(said)
    # A browser that saw the first two steps asks again from there.
    seen = steps[1]["id"]
    _, _, rest = call(chat_butler.url, "GET", events, headers={"Last-Event-ID": seen})
    assert rest.decode().count("\nevent: ") == len(steps) - 2

    status, _, _ = call(chat_butler.url, "GET", "/chat/api/turns/no-such-turn/events")
    assert status == 204  # a browser stops and reads the conversation instead


def test_the_session_page_of_a_chat_message_says_where_it_came_from_and_links_back(chat_butler):
    status, answer = post(chat_butler, {"text": "What is due today?"})
    assert status == 200
    call(chat_butler.url, "GET", f"/chat/api/turns/{answer['turn']}/events")  # to its end
    [(session_id,)] = chat_butler.sql("SELECT id FROM sessions")
    conversation = answer["conversation"]

    status, _, page = call(chat_butler.url, "GET", f"/sessions/{session_id}")

    html = page.decode()
    assert status == 200
    came_from = html.split('<section id="came-from">', 1)[1].split("</section>", 1)[0]
    assert "<dt>channel</dt><dd>web</dd>" in came_from
    assert "<dt>routed by</dt><dd>bound</dd>" in came_from
    assert f'<a id="conversation-link" href="/chat/?c={conversation}">' in came_from
