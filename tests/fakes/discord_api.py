"""A fake Discord on loopback: the REST API and the Gateway WebSocket, and people who write.

It speaks what a bot over the Gateway uses, as Discord's developer
documentation and hikari's client describe it (tests/channels/test_discord.py
argues the fidelity):

- REST under ``/api/v10`` with ``Authorization: Bot <token>``: ``GET
  /gateway/bot``, ``GET /users/@me``, ``GET /channels/{id}``, ``POST
  /channels/{id}/messages`` (2000 characters at most; with files, multipart
  with ``payload_json`` and ``files[n]``, 10 MiB at most, else 413), ``GET
  /channels/{id}/messages?after=`` (newest first), ``POST
  /channels/{id}/typing``; every answer carries the ``X-RateLimit-*``
  headers, and a route told to (:meth:`FakeDiscord.rate_limit`) answers 429
  with ``retry_after`` in its body and ``Retry-After``;
- attachments on a CDN path of the same server;
- the Gateway (``v=10``, JSON, ``compress=zlib-stream``: one zlib stream per
  connection, each payload flushed with ``Z_SYNC_FLUSH``): HELLO (op 10) with
  ``heartbeat_interval``, IDENTIFY (op 2) checked for its token and intents
  (close 4004, 4014), READY, heartbeats (op 1) answered with op 11, dispatches
  with a sequence number, RESUME (op 6) replaying what a session missed then
  RESUMED, RECONNECT (op 7) and INVALID SESSION (op 9) on request.

    discord = FakeDiscord().start()
    discord.say("what is due today?", user=ALICE)      # Alice writes to the bot
    discord.texts(ALICE.dm)                            # what the bot answered
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import secrets
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from tests.fakes.socket_server import SocketFake

TOKEN = "MTA5ODc2NTQzMjEwOTg3NjU0.GfAkE1.fake-bot-token-for-the-suite-only"
BOT_ID = "1098765432109876540"
GUILD = "1200000000000000001"
GENERAL = "1200000000000000002"
THREAD = "1200000000000000003"
MAX_TEXT = 2000
#: What a bot may upload in one message (a server without boosts).
MAX_UPLOAD = 10 * 1024 * 1024
MESSAGE_CONTENT = 1 << 15
TIMESTAMP = "2026-11-01T10:00:00.000000+00:00"


@dataclass(frozen=True)
class Person:
    """A Discord user, with the direct-message channel they share with the bot."""

    id: str
    username: str
    global_name: str | None
    dm: str

    def user(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "username": self.username,
            "global_name": self.global_name,
            "discriminator": "0",
            "avatar": None,
            "public_flags": 0,
        }


ALICE = Person("1300000000000000001", "alice", "Alice", "1310000000000000001")
MALLORY = Person("1300000000000000666", "mallory", None, "1310000000000000666")
BOT = {
    "id": BOT_ID,
    "username": "butler",
    "global_name": None,
    "discriminator": "0",
    "avatar": None,
    "bot": True,
    "flags": 0,
    "mfa_enabled": False,
    "locale": "en-US",
    "premium_type": 0,
    "verified": True,
    "email": None,
}


@dataclass
class _Session:
    """A Gateway session: its id and every dispatch it was sent, for a resume to replay."""

    id: str
    sent: list[dict[str, Any]] = field(default_factory=list)
    seq: int = 0


class _Shard:
    """One Gateway connection: its WebSocket, its zlib stream, what waits to be written."""

    def __init__(self, websocket: WebSocket, compressed: bool) -> None:
        self.websocket = websocket
        self.zlib = zlib.compressobj() if compressed else None
        self.outbox: asyncio.Queue[dict[str, Any] | int] = asyncio.Queue()
        self.session: _Session | None = None

    def encode(self, payload: dict[str, Any]) -> bytes | str:
        text = json.dumps(payload)
        if self.zlib is None:
            return text
        return self.zlib.compress(text.encode()) + self.zlib.flush(zlib.Z_SYNC_FLUSH)


class FakeDiscord(SocketFake):
    """One bot's REST API and Gateway, served from a background thread."""

    name = "fake-discord"

    def __init__(self, token: str = TOKEN, heartbeat_ms: int = 41_250) -> None:
        super().__init__()
        self.token = token
        self.heartbeat_ms = heartbeat_ms
        #: Intents the Developer Portal allows this bot beyond the unprivileged ones.
        self.privileged_intents = 0
        #: Every message the bot created (the request's body, "channel_id" and "id" added).
        self.created: list[dict[str, Any]] = []
        self.typing: list[str] = []
        #: What the bot sent on the Gateway (op codes), and the close codes it was given.
        self.received: list[int] = []
        self.identified = 0
        self.resumed = 0
        self.limited: list[str] = []
        self.files: dict[str, bytes] = {}
        self._limits: dict[str, list[float]] = {}
        self._sessions: dict[str, _Session] = {}
        self._shards: list[_Shard] = []
        self._ids = itertools.count(1)
        self._messages: dict[str, dict[str, Any]] = {}

    # -- the server -------------------------------------------------------

    def settings(self) -> str:
        """The ``[...channels.discord]`` keys that point the channel at this fake."""
        return f'api_url = "{self.url}/api/v10"\nattachment_hosts = ["127.0.0.1"]\n'

    def routes(self) -> list[BaseRoute]:
        api = "/api/v10"
        return [
            Route(f"{api}/gateway/bot", self._gateway_bot, methods=["GET"]),
            Route(f"{api}/users/@me", self._me, methods=["GET"]),
            Route(f"{api}/channels/{{channel}}", self._channel, methods=["GET"]),
            Route(f"{api}/channels/{{channel}}/messages", self._create, methods=["POST"]),
            Route(f"{api}/channels/{{channel}}/messages", self._history, methods=["GET"]),
            Route(f"{api}/channels/{{channel}}/typing", self._typing, methods=["POST"]),
            Route("/attachments/{channel}/{file}/{name}", self._attachment, methods=["GET"]),
            WebSocketRoute("/gateway", self._gateway),
        ]

    def closing(self) -> None:
        self._close_all(1001)

    # -- people -----------------------------------------------------------

    def say(
        self,
        text: str = "",
        user: Person = ALICE,
        channel: str | None = None,
        reply_to: str | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> str:
        """``user`` writes (to the bot by default, or in a guild ``channel``); the message id."""
        channel = channel or user.dm
        message = self._message(channel, user.user(), text)
        if channel != user.dm:
            message["guild_id"] = GUILD
            message["member"] = {"nick": None, "roles": [], "joined_at": TIMESTAMP}
        if f"<@{BOT_ID}>" in text:
            message["mentions"] = [_public(BOT)]
        if reply_to:
            replied = self._messages[reply_to]
            message["type"] = 19
            message["message_reference"] = {
                "type": 0,
                "message_id": reply_to,
                "channel_id": replied["channel_id"],
                **({"guild_id": GUILD} if "guild_id" in message else {}),
            }
            message["referenced_message"] = replied
        if attachments:
            message["attachments"] = attachments
        self.soon(self._dispatch, "MESSAGE_CREATE", message)
        return message["id"]

    def add_file(self, data: bytes, name: str, content_type: str | None, channel: str) -> dict:
        """An attachment as a message carries it, its bytes on the CDN path."""
        file_id = self._snowflake()
        self.files[file_id] = data
        signed = f"ex=1&is=2&hm={secrets.token_hex(8)}"  # the CDN's signature, as Discord adds
        url = f"{self.url}/attachments/{channel}/{file_id}/{name}?{signed}"
        found = {
            "id": file_id,
            "filename": name,
            "size": len(data),
            "url": url,
            "proxy_url": url,
        }
        return {**found, "content_type": content_type} if content_type else found

    def reconnect(self) -> None:
        """Op 7: tell the bot to reconnect and resume, as Discord does before moving a session."""
        self.soon(self._send_all, {"op": 7, "d": None, "s": None, "t": None})

    def invalidate(self, resumable: bool = False) -> None:
        """Op 9: the session is invalid (resumable or not)."""
        self.soon(self._send_all, {"op": 9, "d": resumable, "s": None, "t": None})

    def drop(self, code: int = 4000) -> None:
        """Close every connection with ``code`` (4000: unknown error, the bot may resume)."""
        self.soon(self._close_all, code)

    def rate_limit(self, route: str, times: int = 1, retry_after: float = 0.5) -> None:
        """The next ``times`` requests to ``route`` (e.g. "POST /messages") get 429."""
        self._limits[route] = [times, retry_after]

    def texts(self, channel: str) -> list[str]:
        """What the bot wrote in ``channel``, in order."""
        return [m["content"] for m in self.created if m["channel_id"] == channel]

    def _snowflake(self) -> str:
        return str(1_400_000_000_000_000_000 + next(self._ids))

    def _message(self, channel: str, author: dict[str, Any], content: str) -> dict[str, Any]:
        message = {
            "id": self._snowflake(),
            "channel_id": channel,
            "author": author,
            "content": content,
            "timestamp": TIMESTAMP,
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": 0,
            "components": [],
        }
        self._messages[message["id"]] = message
        return message

    # -- the Gateway ------------------------------------------------------

    async def _gateway(self, websocket: WebSocket) -> None:
        if (
            websocket.query_params.get("v") != "10"
            or websocket.query_params.get("encoding", "json") != "json"
        ):
            await websocket.close(code=4012)  # invalid API version
            return
        await websocket.accept()
        shard = _Shard(websocket, websocket.query_params.get("compress") == "zlib-stream")
        self._shards.append(shard)
        writer = asyncio.create_task(self._write(shard))
        shard.outbox.put_nowait(
            {"op": 10, "d": {"heartbeat_interval": self.heartbeat_ms}, "s": None, "t": None}
        )
        try:
            while True:
                frame = await websocket.receive()
                if frame["type"] == "websocket.disconnect":
                    break
                payload = json.loads(frame.get("text") or frame.get("bytes") or b"{}")
                self.received.append(payload.get("op"))
                self._on_gateway(shard, payload)
                self.note()
        except (WebSocketDisconnect, RuntimeError, ValueError):
            pass
        finally:
            if shard in self._shards:
                self._shards.remove(shard)
            writer.cancel()
            self.note()

    def _on_gateway(self, shard: _Shard, payload: dict[str, Any]) -> None:
        op, data = payload.get("op"), payload.get("d")
        if op == 1:
            shard.outbox.put_nowait({"op": 11, "d": None, "s": None, "t": None})
        elif op == 2:
            self._identify(shard, data or {})
        elif op == 6:
            self._resume(shard, data or {})

    def _identify(self, shard: _Shard, data: dict[str, Any]) -> None:
        if data.get("token") != self.token:
            shard.outbox.put_nowait(4004)  # authentication failed
            return
        intents = int(data.get("intents") or 0)
        if intents & MESSAGE_CONTENT and not self.privileged_intents & MESSAGE_CONTENT:
            shard.outbox.put_nowait(4014)  # disallowed intents
            return
        self.identified += 1
        session = _Session(secrets.token_hex(16))
        self._sessions[session.id] = session
        shard.session = session
        ws = self.url.replace("http://", "ws://") + "/gateway"
        ready = {
            "v": 10,
            "user": BOT,
            "guilds": [],
            "session_id": session.id,
            "resume_gateway_url": ws,
            "application": {"id": BOT_ID, "flags": 0},
            "shard": [0, 1],
        }
        self._send(shard, "READY", ready)

    def _resume(self, shard: _Shard, data: dict[str, Any]) -> None:
        session = self._sessions.get(str(data.get("session_id")))
        if session is None or data.get("token") != self.token:
            shard.outbox.put_nowait({"op": 9, "d": False, "s": None, "t": None})
            return
        self.resumed += 1
        shard.session = session
        after = int(data.get("seq") or 0)
        for payload in session.sent:
            if payload["s"] > after:
                shard.outbox.put_nowait(payload)
        self._send(shard, "RESUMED", {})

    def _send(self, shard: _Shard, name: str, data: dict[str, Any]) -> None:
        assert shard.session is not None
        shard.session.seq += 1
        payload = {"op": 0, "t": name, "s": shard.session.seq, "d": data}
        shard.session.sent.append(payload)
        shard.outbox.put_nowait(payload)

    def _dispatch(self, name: str, data: dict[str, Any]) -> None:
        """Send an event to the newest session, connected or not (a resume replays it)."""
        if not self._sessions:
            return
        session = list(self._sessions.values())[-1]
        session.seq += 1
        payload = {"op": 0, "t": name, "s": session.seq, "d": data}
        session.sent.append(payload)
        for shard in self._shards:
            if shard.session is session:
                shard.outbox.put_nowait(payload)

    async def _write(self, shard: _Shard) -> None:
        while True:
            item = await shard.outbox.get()
            if isinstance(item, int):
                with contextlib.suppress(Exception):
                    await shard.websocket.close(code=item)
                return
            frame = shard.encode(item)
            if isinstance(frame, bytes):
                await shard.websocket.send_bytes(frame)
            else:
                await shard.websocket.send_text(frame)

    def _send_all(self, payload: dict[str, Any]) -> None:
        for shard in self._shards:
            shard.outbox.put_nowait(payload)

    def _close_all(self, code: int) -> None:
        for shard in self._shards:
            shard.outbox.put_nowait(code)

    # -- REST -------------------------------------------------------------

    def _refused(self, request: Request, route: str) -> Response | None:
        """401 without the bot's token; 429 while ``route`` is rate limited."""
        if request.headers.get("authorization") != f"Bot {self.token}":
            return _json({"message": "401: Unauthorized", "code": 0}, 401)
        limit = self._limits.get(route)
        if limit and limit[0] > 0:
            limit[0] -= 1
            self.limited.append(route)
            retry = limit[1]
            headers = {
                **_bucket(route, remaining=0, reset_after=retry),
                "Retry-After": str(max(1, round(retry))),
                "X-RateLimit-Scope": "user",
            }
            body = {"message": "You are being rate limited.", "retry_after": retry, "global": False}
            return _json(body, 429, headers)
        return None

    async def _gateway_bot(self, request: Request) -> Response:
        refused = self._refused(request, "GET /gateway/bot")
        if refused:
            return refused
        limit = {"total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1}
        ws = self.url.replace("http://", "ws://") + "/gateway"
        return _json({"url": ws, "shards": 1, "session_start_limit": limit}, 200, _bucket("gw"))

    async def _me(self, request: Request) -> Response:
        return self._refused(request, "GET /users/@me") or _json(BOT, 200, _bucket("me"))

    async def _channel(self, request: Request) -> Response:
        refused = self._refused(request, "GET /channels")
        if refused:
            return refused
        channel = request.path_params["channel"]
        found = _channels().get(channel)
        if found is None:
            return _json({"message": "Unknown Channel", "code": 10003}, 404)
        return _json(found, 200, _bucket("channel"))

    async def _create(self, request: Request) -> Response:
        refused = self._refused(request, "POST /messages")
        if refused:
            return refused
        channel = request.path_params["channel"]
        body, files = await _message_body(request)
        content = body.get("content")
        if channel not in _channels():
            return _json({"message": "Unknown Channel", "code": 10003}, 404)
        if sum(len(f["data"]) for f in files) > MAX_UPLOAD:
            return _json({"message": "Request entity too large", "code": 40005}, 413)
        empty = not isinstance(content, str) or not content.strip()
        if (empty and not files) or (isinstance(content, str) and len(content) > MAX_TEXT):
            errors = {"content": {"_errors": [{"code": "BASE_TYPE_BAD_LENGTH"}]}}
            body_error = {"message": "Invalid Form Body", "code": 50035, "errors": errors}
            return _json(body_error, 400)
        message = self._message(channel, {**_public(BOT), "bot": True}, content or "")
        for number, file in enumerate(files):
            message["attachments"].append(
                {
                    "id": self._snowflake(),
                    "filename": file["filename"],
                    "size": len(file["data"]),
                    "content_type": file["content_type"],
                    "url": f"{self.url}/attachments/{channel}/{message['id']}-{number}/x",
                    "proxy_url": f"{self.url}/attachments/{channel}/{message['id']}-{number}/x",
                }
            )
        extra = {"files": files} if files else {}
        self.created.append({**body, **extra, "channel_id": channel, "id": message["id"]})
        self.note()
        return _json(message, 200, _bucket(f"messages-{channel}"))

    async def _history(self, request: Request) -> Response:
        """``?after=ID&limit=N``: the channel's messages after ID, newest first, as Discord does."""
        refused = self._refused(request, "GET /messages")
        if refused:
            return refused
        channel = request.path_params["channel"]
        if channel not in _channels():
            return _json({"message": "Unknown Channel", "code": 10003}, 404)
        after = int(request.query_params.get("after") or 0)
        limit = min(int(request.query_params.get("limit") or 50), 100)
        found = sorted(
            (m for m in self._messages.values() if m["channel_id"] == channel),
            key=lambda m: int(m["id"]),
        )
        found = [m for m in found if int(m["id"]) > after]
        return _json(list(reversed(found[:limit])), 200, _bucket(f"history-{channel}"))

    async def _typing(self, request: Request) -> Response:
        refused = self._refused(request, "POST /typing")
        if refused:
            return refused
        self.typing.append(request.path_params["channel"])
        self.note()
        return Response(status_code=204, headers=_bucket("typing"))

    async def _attachment(self, request: Request) -> Response:
        data = self.files.get(request.path_params["file"])
        if data is None:
            return Response(status_code=404)
        return Response(data, media_type="application/octet-stream")


async def _message_body(request: Request) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A message's JSON and its files: a JSON body, or (with files) ``multipart/form-data``
    with the JSON in ``payload_json`` and each file in ``files[n]``, as Discord takes them."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        return await request.json(), []
    form = await request.form()
    payload = form.get("payload_json")
    body = json.loads(payload) if isinstance(payload, str) else {}
    files = []
    for key, value in form.multi_items():
        if isinstance(value, UploadFile) and re.fullmatch(r"files\[\d+\]", key):
            data = await value.read()
            files.append(
                {"filename": value.filename, "content_type": value.content_type, "data": data}
            )
    return body, files


def _public(user: dict[str, Any]) -> dict[str, Any]:
    """A user as others see them in a message (no email, no locale)."""
    return {k: v for k, v in user.items() if k in ALICE.user()}


def _channels() -> dict[str, dict[str, Any]]:
    """The channels the bot can see: each person's DM, a guild text channel, a thread in it."""
    found: dict[str, dict[str, Any]] = {}
    for person in (ALICE, MALLORY):
        found[person.dm] = {
            "id": person.dm,
            "type": 1,
            "last_message_id": None,
            "flags": 0,
            "recipients": [person.user()],
        }
    found[GENERAL] = {
        "id": GENERAL,
        "type": 0,
        "guild_id": GUILD,
        "name": "general",
        "position": 0,
        "permission_overwrites": [],
        "nsfw": False,
        "topic": None,
        "rate_limit_per_user": 0,
        "parent_id": None,
        "last_message_id": None,
        "flags": 0,
    }
    found[THREAD] = {
        "id": THREAD,
        "type": 11,
        "guild_id": GUILD,
        "parent_id": GENERAL,
        "owner_id": ALICE.id,
        "name": "meds",
        "last_message_id": None,
        "message_count": 1,
        "member_count": 2,
        "rate_limit_per_user": 0,
        "flags": 0,
        "total_message_sent": 1,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": 1440,
            "archive_timestamp": TIMESTAMP,
            "locked": False,
            "create_timestamp": TIMESTAMP,
        },
    }
    return found


def _bucket(name: str, remaining: int = 4, reset_after: float = 1.0) -> dict[str, str]:
    """The rate-limit headers Discord puts on every answer."""
    return {
        "X-RateLimit-Limit": "5",
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
        "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        "X-RateLimit-Bucket": f"bucket-{name}",
    }


def _json(body: Any, status: int, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)
