"""A fake Slack on loopback: the Web API and the Socket Mode WebSocket, and people who write.

It speaks what an app in Socket Mode uses, as Slack's documentation and
slack-sdk's clients describe it (tests/channels/test_slack.py argues the
fidelity):

- the Web API: ``POST/GET /api/<method>`` with the token in
  ``Authorization: Bearer``, answers ``{"ok": true, ...}`` or ``{"ok": false,
  "error": ...}`` with HTTP 200, and HTTP 429 with ``Retry-After`` when rate
  limited: ``auth.test``, ``apps.connections.open`` (the app-level token
  only), ``chat.postMessage`` (40 000 characters at most), ``users.info``,
  ``files.info``, ``conversations.info``, ``conversations.history``
  (top-level messages after ``oldest``, newest first),
  ``assistant.threads.setStatus``; and a file upload as ``files_upload_v2`` makes
  it: ``files.getUploadURLExternal`` (name and length), the bytes POSTed to the
  upload URL it gave, ``files.completeUploadExternal`` sharing it in a channel
  (and thread) with its comment;
- shared files at ``url_private_download``, for the bot token only;
- Socket Mode at the one-time URL ``apps.connections.open`` returns: ``hello``
  on connect, each event in an ``events_api`` envelope the app must
  acknowledge with ``{"envelope_id": ...}``, an envelope not acknowledged in
  ``ack_timeout_s`` delivered again (``retry_attempt``, ``retry_reason``) up to
  three times, and ``disconnect`` (``refresh_requested``) before it closes a
  connection.

    slack = FakeSlack().start()
    slack.say("what is due today?", user=ALICE)      # Alice writes to the app
    slack.texts(ALICE.dm)                            # what the app answered

Restarting it (:meth:`restart`) keeps its state and its port: envelopes not
acknowledged are delivered again to the next connection, as Slack retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from tests.fakes.socket_server import SocketFake

BOT_TOKEN = "xoxb-1111-2222-fake-bot-token-for-the-suite"
APP_TOKEN = "xapp-1-A0FAKE-3333-fake-app-token-for-the-suite"
TEAM, APP, BOT_USER, BOT_ID = "T0FAKE", "A0FAKE", "U0BUTLER", "B0BUTLER"
GENERAL = "C0GENERAL"
MAX_TEXT = 40_000
#: How often Slack delivers an event again when it is not acknowledged.
MAX_RETRIES = 3


@dataclass(frozen=True)
class Person:
    """A Slack user, with the direct-message channel they share with the app."""

    id: str
    name: str
    display_name: str

    @property
    def dm(self) -> str:
        return f"D{self.id[1:]}"


ALICE = Person("U0ALICE", "alice", "Alice")
MALLORY = Person("U0MALLORY", "mallory", "")


class _Link:
    """One Socket Mode connection: its WebSocket and what waits to be written to it."""

    def __init__(self, websocket: WebSocket) -> None:
        self.websocket = websocket
        self.outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.open = True


class FakeSlack(SocketFake):
    """One Slack app in one workspace, served from a background thread."""

    name = "fake-slack"

    def __init__(self, bot_token: str = BOT_TOKEN, app_token: str = APP_TOKEN) -> None:
        super().__init__()
        self.bot_token, self.app_token = bot_token, app_token
        #: Every message the app posted (chat.postMessage's arguments, "ts" added).
        self.posted: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        #: Every envelope sent, and the envelope ids the app acknowledged.
        self.envelopes: list[dict[str, Any]] = []
        self.acks: list[str] = []
        self.connections = 0
        self.calls: list[str] = []
        self.files: dict[str, dict[str, Any]] = {}
        #: Every file the app shared: its channel, thread, comment, name and bytes.
        self.shared: list[dict[str, Any]] = []
        self._uploads: dict[str, dict[str, Any]] = {}  # file id -> name, length, bytes
        self._messages: dict[tuple[str, str], str] = {}  # (channel, ts) -> author
        self._limits: dict[str, list[float]] = {}  # method -> [times left, retry_after]
        self._history: dict[str, list[dict[str, Any]]] = {}  # channel -> its top-level messages
        self._tickets: set[str] = set()
        self._links: list[_Link] = []
        self._waiting: list[tuple[dict[str, Any], int, str]] = []
        self._unacked: dict[str, tuple[dict[str, Any], int]] = {}
        self._ts = itertools.count(1)
        self._lock = threading.Lock()
        self.ack_timeout_s = 3.0

    # -- the server -------------------------------------------------------

    def settings(self) -> str:
        """The ``[...channels.slack]`` keys that point the channel at this fake."""
        return f'api_url = "{self.url}/api"\nfiles_url = "{self.url}"\n'

    def routes(self) -> list[BaseRoute]:
        return [
            Route("/api/{method}", self._method, methods=["GET", "POST"]),
            Route("/files-pri/{file_id}/{name}", self._file, methods=["GET"]),
            Route("/upload/v1/{file_id}", self._upload, methods=["POST"]),
            WebSocketRoute("/link/", self._link),
        ]

    def started(self) -> None:
        # What the last run left unacknowledged goes to the next connection.
        self._waiting += [(p, attempt, "timeout") for p, attempt in self._unacked.values()]
        self._unacked.clear()

    # -- people -----------------------------------------------------------

    def say(
        self,
        text: str = "",
        user: Person = ALICE,
        channel: str | None = None,
        thread_ts: str | None = None,
        files: list[dict[str, Any]] | None = None,
        delivered: bool = True,
    ) -> str:
        """``user`` writes (to the app by default, or in ``channel``); the message's ts.

        ``text`` is what the person typed, with Slack's markup for a mention
        (``<@U0BUTLER>``); it is escaped as Slack escapes it. ``delivered``
        false: a message Slack gave up delivering (the app was away longer
        than its retries), found only in the conversation's history.

        In a channel, a mention of the app comes as ``app_mention`` and, as the
        app also reads the channel, as ``message``: the same message twice.
        """
        channel = channel or user.dm
        ts = self._next_ts()
        event: dict[str, Any] = {
            "type": "message",
            "user": user.id,
            "text": _escaped(text),
            "ts": ts,
            "event_ts": ts,
            "channel": channel,
            "channel_type": "im" if channel.startswith("D") else "channel",
            "team": TEAM,
            "client_msg_id": str(uuid.uuid4()),
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
            event["parent_user_id"] = self._messages.get((channel, thread_ts), "")
        if files:
            event["subtype"] = "file_share"
            event["files"] = files
        with self._lock:
            self._messages[(channel, ts)] = user.id
            if not thread_ts:
                self._history.setdefault(channel, []).append(event)
        if not delivered:
            return ts
        events = [event]
        if not channel.startswith("D") and f"<@{BOT_USER}>" in text:
            mention = {k: v for k, v in event.items() if k not in ("channel_type", "subtype")}
            events.insert(0, {**mention, "type": "app_mention"})
        for item in events:
            self.soon(self._deliver, self._callback(item), 0, "")
        return ts

    def add_file(self, data: bytes, name: str, mimetype: str, size: int | None = None) -> dict:
        """A file a person shares; its entry as a message's ``files`` carries it."""
        file_id = f"F{len(self.files) + 1:07d}"
        # Slack puts a cleaned name in the address, never the sender's path.
        url = f"{self.url}/files-pri/{TEAM}-{file_id}/{re.sub(r'[^A-Za-z0-9._-]', '_', name)}"
        entry = {
            "id": file_id,
            "name": name,
            "title": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": len(data) if size is None else size,
            "mode": "hosted",
            "url_private": url,
            "url_private_download": f"{url}?download=1",
        }
        self.files[file_id] = {**entry, "data": data}
        return entry

    def refresh(self) -> None:
        """Ask the app to move to a new connection, as Slack does every few hours."""
        self.soon(self._refresh)

    def drop(self) -> None:
        """Close every connection at once, without a word first (a network failure)."""
        self.soon(self.closing)

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 1) -> None:
        """The next ``times`` calls of ``method`` get HTTP 429 with ``Retry-After``."""
        self._limits[method] = [times, retry_after]

    def texts(self, channel: str) -> list[str]:
        """What the app posted in ``channel``, in order."""
        return [p["text"] for p in self.posted if p["channel"] == channel]

    def _next_ts(self) -> str:
        n = next(self._ts)
        return f"{1_760_000_000 + n}.{n:06d}"

    @staticmethod
    def _callback(event: dict[str, Any]) -> dict[str, Any]:
        """An event as the Events API wraps it."""
        return {
            "token": "fake-verification-token",
            "team_id": TEAM,
            "api_app_id": APP,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{uuid.uuid4().hex[:10].upper()}",
            "event_time": int(float(event["ts"])),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": TEAM,
                    "user_id": BOT_USER,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
        }

    # -- Socket Mode ------------------------------------------------------

    async def _link(self, websocket: WebSocket) -> None:
        ticket = websocket.query_params.get("ticket", "")
        if ticket not in self._tickets:
            await websocket.close(code=1008)
            return
        self._tickets.discard(ticket)  # a URL serves one connection
        await websocket.accept()
        link = _Link(websocket)
        self.connections += 1
        await websocket.send_json(
            {
                "type": "hello",
                "num_connections": len(self._links) + 1,
                "debug_info": {
                    "host": "applink-fake",
                    "build_number": 1,
                    "approximate_connection_time": 18060,
                },
                "connection_info": {"app_id": APP},
            }
        )
        self._links.append(link)
        waiting, self._waiting = self._waiting, []
        for payload, attempt, reason in waiting:
            self._deliver(payload, attempt, reason)
        writer = asyncio.create_task(self._write(link))
        try:
            while True:
                data = json.loads(await websocket.receive_text())
                envelope = data.get("envelope_id") if isinstance(data, dict) else None
                if envelope:  # a late one is noted too, though Slack has sent it again by then
                    self._unacked.pop(envelope, None)
                    self.acks.append(envelope)
                    self.note()
        except (WebSocketDisconnect, RuntimeError, ValueError):
            pass
        finally:
            link.open = False
            if link in self._links:
                self._links.remove(link)
            writer.cancel()
            self.note()

    async def _write(self, link: _Link) -> None:
        while True:
            item = await link.outbox.get()
            if item is None:
                link.open = False
                with contextlib.suppress(Exception):
                    await link.websocket.close(code=1001)
                return
            await link.websocket.send_json(item)

    def _deliver(self, payload: dict[str, Any], attempt: int, reason: str) -> None:
        """Send ``payload`` in a new envelope to the newest connection, retried until acked."""
        link = next((x for x in reversed(self._links) if x.open), None)
        if link is None:
            self._waiting.append((payload, attempt, reason))
            return
        envelope = {
            "envelope_id": str(uuid.uuid4()),
            "payload": payload,
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": attempt,
            "retry_reason": reason,
        }
        self.envelopes.append(envelope)
        self._unacked[envelope["envelope_id"]] = (payload, attempt)
        link.outbox.put_nowait(envelope)
        self.later(self.ack_timeout_s, lambda: self._unacknowledged(envelope["envelope_id"]))
        self.note()

    def _unacknowledged(self, envelope: str) -> None:
        found = self._unacked.pop(envelope, None)
        if found is not None and found[1] < MAX_RETRIES:
            self._deliver(found[0], found[1] + 1, "timeout")

    def _refresh(self) -> None:
        old = [x for x in self._links if x.open]
        for link in old:
            link.outbox.put_nowait(
                {
                    "type": "disconnect",
                    "reason": "refresh_requested",
                    "debug_info": {"host": "applink-fake"},
                }
            )
        # Slack closes the old connection a few seconds later, whether the app moved or not.
        self.later(5.0, lambda: [x.outbox.put_nowait(None) for x in old])

    def closing(self) -> None:
        for link in list(self._links):
            link.outbox.put_nowait(None)

    # -- the Web API ------------------------------------------------------

    async def _method(self, request: Request) -> Response:
        method = request.path_params["method"]
        params = await _params(request)
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        token = token or str(params.get("token") or "")
        self.calls.append(method)
        limit = self._limits.get(method)
        if limit and limit[0] > 0:
            limit[0] -= 1
            return JSONResponse(
                {"ok": False, "error": "ratelimited"},
                status_code=429,
                headers={"Retry-After": str(int(limit[1]))},
            )
        if method == "apps.connections.open":
            return self._connections_open(token)
        if token != self.bot_token:
            error = "not_allowed_token_type" if token == self.app_token else "invalid_auth"
            return _fail(error)
        handlers: dict[str, Callable[[dict[str, Any]], Response]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "users.info": self._users_info,
            "files.info": self._files_info,
            "conversations.info": self._conversations_info,
            "conversations.history": self._conversations_history,
            "assistant.threads.setStatus": self._set_status,
            "files.getUploadURLExternal": self._upload_url,
            "files.completeUploadExternal": self._complete_upload,
        }
        handler = handlers.get(method)
        return handler(params) if handler else _fail("unknown_method")

    def _connections_open(self, token: str) -> Response:
        if token != self.app_token:
            return _fail("not_allowed_token_type" if token == self.bot_token else "invalid_auth")
        ticket = secrets.token_hex(16)
        self._tickets.add(ticket)
        ws = self.url.replace("http://", "ws://")
        return _ok(url=f"{ws}/link/?ticket={ticket}&app_id={APP}")

    def _auth_test(self, params: dict[str, Any]) -> Response:
        return _ok(
            url="https://fake-team.slack.com/",
            team="Fake team",
            user="butler",
            team_id=TEAM,
            user_id=BOT_USER,
            bot_id=BOT_ID,
            is_enterprise_install=False,
        )

    def _post_message(self, params: dict[str, Any]) -> Response:
        channel, text = str(params.get("channel") or ""), params.get("text")
        if not isinstance(text, str) or not text.strip():
            return _fail("no_text")
        if len(text) > MAX_TEXT:
            return _fail("msg_too_long")
        if not any(c == channel for c, _ in self._messages):
            return _fail("channel_not_found")
        ts = self._next_ts()
        message = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID, "text": text, "ts": ts}
        if params.get("thread_ts"):
            message["thread_ts"] = params["thread_ts"]
        with self._lock:
            self._messages[(channel, ts)] = BOT_USER
            self.posted.append({**params, "channel": channel, "ts": ts})
            if not params.get("thread_ts"):
                self._history.setdefault(channel, []).append(message)
        self.note()
        return _ok(channel=channel, ts=ts, message=message)

    def _users_info(self, params: dict[str, Any]) -> Response:
        for person in (ALICE, MALLORY):
            if person.id == params.get("user"):
                profile = {"display_name": person.display_name, "real_name": person.name}
                return _ok(user={"id": person.id, "name": person.name, "profile": profile})
        return _fail("user_not_found")

    def _files_info(self, params: dict[str, Any]) -> Response:
        found = self.files.get(str(params.get("file")))
        if found is None:
            return _fail("file_not_found")
        return _ok(file={k: v for k, v in found.items() if k != "data"})

    def _conversations_info(self, params: dict[str, Any]) -> Response:
        channel = str(params.get("channel") or "")
        if not any(c == channel for c, _ in self._messages):
            return _fail("channel_not_found")
        direct = channel.startswith("D")
        return _ok(channel={"id": channel, "is_im": direct, "is_channel": not direct})

    def _conversations_history(self, params: dict[str, Any]) -> Response:
        """Top-level messages after ``oldest`` (exclusive unless ``inclusive``), newest first."""
        channel = str(params.get("channel") or "")
        if channel not in self._history:
            return _fail("channel_not_found")

        def key(ts: str) -> tuple[int, ...]:
            return tuple(int(p) for p in ts.split("."))

        oldest = key(str(params.get("oldest") or "0.0"))
        inclusive = str(params.get("inclusive")).lower() in ("1", "true")
        limit = min(int(params.get("limit") or 100), 999)
        found = [
            m
            for m in self._history[channel]
            if key(m["ts"]) > oldest or (inclusive and key(m["ts"]) == oldest)
        ]
        found = list(reversed(found))[:limit]
        return _ok(messages=found, has_more=False, response_metadata={"next_cursor": ""})

    def _set_status(self, params: dict[str, Any]) -> Response:
        if not params.get("channel_id") or not params.get("thread_ts"):
            return _fail("invalid_arguments")
        self.statuses.append(params)
        self.note()
        return _ok()

    def _upload_url(self, params: dict[str, Any]) -> Response:
        name, length = params.get("filename"), str(params.get("length") or "")
        if not name or not length.isdigit() or int(length) < 1:
            return _fail("invalid_arguments")
        file_id = f"F0UP{len(self._uploads) + 1}"
        self._uploads[file_id] = {"filename": name, "length": int(length), "data": None}
        return _ok(upload_url=f"{self.url}/upload/v1/{file_id}", file_id=file_id)

    async def _upload(self, request: Request) -> Response:
        """The upload URL: the file's bytes as the body (as slack-sdk sends them), which
        must be the length announced."""
        found = self._uploads.get(request.path_params["file_id"])
        data = await request.body()
        if found is None or found["data"] is not None:
            return Response("upload not found", status_code=404)
        if len(data) != found["length"]:
            return Response("length mismatch", status_code=400)
        found["data"] = data
        return Response(f"OK - {len(data)}", media_type="text/plain")

    def _complete_upload(self, params: dict[str, Any]) -> Response:
        files = params.get("files")
        files = json.loads(files) if isinstance(files, str) else files
        channel = str(params.get("channel_id") or "")
        if not isinstance(files, list) or not files:
            return _fail("invalid_arguments")
        if channel and not any(c == channel for c, _ in self._messages):
            return _fail("channel_not_found")
        done = []
        for entry in files:
            found = self._uploads.get(str(entry.get("id")))
            if found is None or found["data"] is None:
                return _fail("file_not_found")
            done.append({"id": entry["id"], "title": entry.get("title") or found["filename"]})
            with self._lock:
                self.shared.append(
                    {
                        "channel": channel,
                        "thread_ts": params.get("thread_ts"),
                        "initial_comment": params.get("initial_comment"),
                        "title": done[-1]["title"],
                        "filename": found["filename"],
                        "data": found["data"],
                    }
                )
        self.note()
        return _ok(files=done)

    async def _file(self, request: Request) -> Response:
        token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if token != self.bot_token:
            return Response(status_code=404)  # Slack hides private files from strangers
        file_id = request.path_params["file_id"].removeprefix(f"{TEAM}-")
        found = self.files.get(file_id)
        if found is None or not found["url_private"].endswith(f"/{request.path_params['name']}"):
            return Response(status_code=404)
        return Response(found["data"], media_type=found["mimetype"])


def _escaped(text: str) -> str:
    """``text`` as Slack sends it: &, <, > escaped, except in its own <@U...> markup."""
    parts = re.split(r"(<[@#!][A-Za-z0-9|^._-]+>)", text)
    return "".join(
        part if i % 2 else part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for i, part in enumerate(parts)
    )


async def _params(request: Request) -> dict[str, Any]:
    """A method's arguments, from the query, a JSON body or a form."""
    found: dict[str, Any] = dict(request.query_params)
    kind = request.headers.get("content-type", "")
    if kind.startswith("application/json"):
        found.update(json.loads(await request.body() or b"{}"))
    elif kind.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        found.update({k: v for k, v in (await request.form()).items() if isinstance(v, str)})
    return found


def _ok(**fields: Any) -> JSONResponse:
    return JSONResponse({"ok": True, **fields})


def _fail(error: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": error})
