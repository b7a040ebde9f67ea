"""A fake Telegram Bot API on loopback, and the phone that talks to the bot through it.

It speaks the real HTTP API, the part a bot by long polling uses: ``getMe``,
``getUpdates`` (long polling, offsets confirming earlier updates),
``sendMessage`` (4096 UTF-16 units at most, like the real one),
``sendDocument`` and ``sendPhoto`` (multipart uploads), ``sendChatAction``,
``getFile`` and the file download path, ``leaveChat``. Told to (:meth:`flood`), it
answers ``sendMessage`` (and a file's send) with 429 and ``parameters.retry_after`` as Telegram's
flood control does, and a retry before that time is refused again (and
counted in :attr:`too_early`). A client library
pointed at :attr:`FakeTelegram.api_url` cannot tell it from Telegram
(Apprise, whose address is fixed, reaches it through tests/fakes/telegram.py).

Groups as Telegram has them: a person adds the bot (a ``my_chat_member``
update), the server marks commands and ``@username`` mentions as entities,
a reply carries the message it answers, and with privacy mode on (the
default for a new bot) the bot receives only commands, mentions of it and
replies to it; off (or as an admin), everything said. A bot that left a
group hears nothing more there and cannot write to it.

    telegram = FakeTelegram().start()
    telegram.send("what is due today?", user=PERSON)   # the phone writes
    telegram.texts(chat=PERSON.id)                    # what the bot answered
    telegram.add_bot(FAMILY, by=PERSON)               # the bot joins a group
    telegram.send("@butler_test_bot hi", user=PERSON, chat=FAMILY)

Restarting it (:meth:`restart`) keeps its state and its port: the updates a
bot has not confirmed yet are delivered again, as Telegram does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.threaded_server import ThreadedServer

TOKEN = "123456789:TEST-fake-token-for-the-suite-only"
BOT = {"id": 999000, "is_bot": True, "first_name": "Butler", "username": "butler_test_bot"}
MAX_TEXT = 4096
#: Parameters a form carries as plain strings; every other value is JSON.
STRINGS = {"text", "file_id", "action", "parse_mode", "caption"}


@dataclass(frozen=True)
class Person:
    """A Telegram user, chatting with the bot in a private chat of their own."""

    id: int
    first_name: str
    username: str | None = None

    def user(self) -> dict[str, Any]:
        found = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        return {**found, "username": self.username} if self.username else found


ALICE = Person(1001, "Alice", "alice")
MALLORY = Person(6666, "Mallory")


@dataclass(frozen=True)
class Group:
    """A Telegram group (a supergroup, as every group with a topic or a link now is)."""

    id: int
    title: str
    type: str = "supergroup"

    def chat(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "title": self.title}


FAMILY = Group(-1001234567890, "Family")
#: What Telegram marks as a command and as a mention in a message's text.
_COMMAND = re.compile(r"^/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{5,32})?")
_MENTION = re.compile(r"(?<![\w@])@[A-Za-z0-9_]{5,32}")


class FakeTelegram:
    """The Bot API of one bot, served from a background thread."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.updates: list[dict[str, Any]] = []
        #: Every message and file the bot sent, as sent (chat_id as an int, "method" added).
        self.sent: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []
        self.refused: list[dict[str, Any]] = []
        self.files: dict[str, tuple[str, bytes]] = {}
        self.confirmed = 0
        #: Groups the bot is a member of, and those it left (by chat id, in order).
        self.groups: dict[int, Group] = {}
        self.left: list[int] = []
        #: Privacy mode (BotFather's /setprivacy): on for a new bot.
        self.privacy = True
        self._people: set[int] = set()
        #: Flood control: how many more sends are refused, for how long each time.
        self._flood = [0, 0]
        self._flood_until = 0.0
        #: Sends that came back before the ``retry_after`` Telegram gave had passed.
        self.too_early = 0
        #: Every 429 answered.
        self.flooded = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition()
        self._next_message = 1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._changed: asyncio.Event | None = None
        self._port: int | None = None
        self._closing = False
        self._http: ThreadedServer | None = None

    # -- the server -------------------------------------------------------

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> FakeTelegram:
        self._closing = False
        self._http = ThreadedServer(self._app(), "fake-telegram")
        self._port = self._http.start(self._port)
        return self

    def stop(self) -> None:
        self._closing = True  # long polls in flight answer now, so the server stops at once
        self._wake()
        if self._http is not None:
            self._http.stop()
            self._http = None

    def restart(self) -> None:
        """Stop and start again on the same port, keeping every update and message."""
        self.stop()
        self.start()

    def __enter__(self) -> FakeTelegram:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _app(self) -> Starlette:
        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            self._loop = asyncio.get_running_loop()
            self._changed = asyncio.Event()
            yield

        routes = [
            Route("/bot{token}/{method}", self._method, methods=["GET", "POST"]),
            Route("/file/bot{token}/{path:path}", self._file, methods=["GET"]),
        ]
        return Starlette(routes=routes, lifespan=lifespan)

    def _wake(self) -> None:
        loop, changed = self._loop, self._changed
        if loop is not None and changed is not None and not loop.is_closed():
            loop.call_soon_threadsafe(changed.set)

    # -- the phone --------------------------------------------------------

    def send(
        self,
        text: str | None = None,
        user: Person = ALICE,
        chat: Group | None = None,
        reply_to: dict[str, Any] | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """``user`` writes to the bot in their private chat, or in ``chat``; the message as
        the bot gets it (a group's message the bot may not see is made all the same)."""
        with self._lock:
            where = (
                chat.chat()
                if chat
                else {"id": user.id, "type": "private", "first_name": user.first_name}
            )
            message = {
                "message_id": self._next_message,
                "date": 1_760_000_000 + self._next_message,
                "chat": where,
                "from": user.user(),
                **({"text": text} if text is not None else {}),
                **({"entities": _entities(text)} if text and _entities(text) else {}),
                **({"reply_to_message": reply_to} if reply_to else {}),
                **extra,
            }
            self._next_message += 1
            if chat is None:
                self._people.add(user.id)
            if chat is None or self._sees(chat, message):
                self._update({"message": message})
        self._wake()
        return message

    def add_bot(self, group: Group, by: Person = ALICE) -> None:
        """``by`` adds the bot to ``group``: it is a member, and told so."""
        with self._lock:
            self.groups[group.id] = group
            member = {"user": BOT, "status": "member"}
            change = {
                "chat": group.chat(),
                "from": by.user(),
                "date": 1_760_000_000,
                "old_chat_member": {"user": BOT, "status": "left"},
                "new_chat_member": member,
            }
            self._update({"my_chat_member": change})
        self._wake()

    def bot_message(self, chat: int, index: int = -1) -> dict[str, Any]:
        """A message the bot sent to ``chat``, as a person's reply quotes it."""
        sent = [m for m in self.sent if m["chat_id"] == chat and m["method"] == "sendMessage"]
        found = sent[index]
        where = self.groups[chat].chat() if chat in self.groups else {"id": chat, "type": "private"}
        return {
            "message_id": found["message_id"],
            "date": 1_760_000_000,
            "chat": where,
            "from": BOT,
            "text": found["text"],
        }

    def _sees(self, group: Group, message: dict[str, Any]) -> bool:
        """Whether the bot receives a group's message: a member, and past privacy mode."""
        if group.id not in self.groups:
            return False
        if not self.privacy:
            return True
        text = message.get("text") or ""
        command = _COMMAND.match(text)
        named = command[0].partition("@")[2] if command else ""
        replied = (message.get("reply_to_message") or {}).get("from", {}).get("id")
        return (
            (command is not None and named.lower() in ("", BOT["username"].lower()))
            or f"@{BOT['username']}".lower() in text.lower()
            or replied == BOT["id"]
        )

    def _update(self, content: dict[str, Any]) -> None:
        self.updates.append({"update_id": 5000 + len(self.updates), **content})

    def add_file(self, data: bytes, path: str) -> str:
        """A file the bot may fetch; its file_id."""
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = (path, data)
        return file_id

    def texts(self, chat: int) -> list[str]:
        """What the bot sent to ``chat``, in order."""
        return [
            m["text"] for m in self.sent if m["chat_id"] == chat and m["method"] == "sendMessage"
        ]

    # -- the API ----------------------------------------------------------

    async def _method(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return _error(401, "Unauthorized")
        params = await _params(request)
        method = request.path_params["method"]
        handlers = {
            "getMe": lambda p: _ok(BOT),
            "leaveChat": self._leave_chat,
            "getUpdates": self._get_updates,
            "sendMessage": self._send_message,
            "sendDocument": lambda p: self._send_file("sendDocument", "document", p),
            "sendPhoto": lambda p: self._send_file("sendPhoto", "photo", p),
            "sendChatAction": self._send_chat_action,
            "getFile": self._get_file,
        }
        handler = handlers.get(method)
        if handler is None:
            return _error(404, "Not Found: method not found")
        answer = handler(params)
        return await answer if asyncio.iscoroutine(answer) else answer

    async def _get_updates(self, params: dict[str, Any]) -> Response:
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        if offset:
            self.confirmed = max(self.confirmed, offset)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            assert self._changed is not None
            self._changed.clear()
            waiting = [u for u in list(self.updates) if u["update_id"] >= self.confirmed]
            left = deadline - asyncio.get_running_loop().time()
            if waiting or left <= 0 or self._closing:
                return _ok(waiting[:100])
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except TimeoutError:
                pass

    def flood(self, times: int = 1, retry_after: int = 1) -> None:
        """The next ``times`` sends (a message or a file) get 429, retry after ``retry_after`` s."""
        self._flood = [times, retry_after]

    def _flooded(self) -> Response | None:
        """Telegram's flood control: 429 with ``retry_after``, also for a retry too soon."""
        now = time.monotonic()
        early = now < self._flood_until
        if early:
            self.too_early += 1
        elif self._flood[0] <= 0:
            return None
        else:
            self._flood[0] -= 1
            self._flood_until = now + self._flood[1]
        self.flooded += 1
        wait = max(1, round(self._flood_until - now))
        body = {
            "ok": False,
            "error_code": 429,
            "description": f"Too Many Requests: retry after {wait}",
            "parameters": {"retry_after": wait},
        }
        return JSONResponse(body, 429)

    def _send_message(self, params: dict[str, Any]) -> Response:
        flooded = self._flooded()
        if flooded is not None:
            return flooded
        chat, text = _chat(params), params.get("text")
        if not isinstance(text, str) or not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if len(text.encode("utf-16-le")) // 2 > MAX_TEXT:
            self.refused.append(params)
            return _error(400, "Bad Request: message is too long")
        refused = self._cannot_write(chat)
        if refused is not None:
            return refused
        with self._lock:
            message_id = self._next_message
            self._next_message += 1
        sent = {**params, "chat_id": chat, "method": "sendMessage", "message_id": message_id}
        self._record(sent)
        return _ok(self._message(message_id, chat, text=text))

    def _cannot_write(self, chat: int | str) -> Response | None:
        """Telegram's answer when the bot may not write to ``chat``, else None."""
        if chat in self.left:
            return _error(403, "Forbidden: bot is not a member of the supergroup chat")
        if chat not in self._people and chat not in self.groups:
            return _error(400, "Bad Request: chat not found")
        return None

    def _leave_chat(self, params: dict[str, Any]) -> Response:
        chat = _chat(params)
        if chat not in self.groups:
            return _error(400, "Bad Request: chat not found")
        with self._lock:
            del self.groups[chat]
            self.left.append(chat)
        return _ok(True)

    def _send_file(self, method: str, field: str, params: dict[str, Any]) -> Response:
        flooded = self._flooded()
        if flooded is not None:
            return flooded
        chat = _chat(params)
        if not isinstance(params.get(field), dict):
            return _error(400, f"Bad Request: there is no {field} in the request")
        refused = self._cannot_write(chat)
        if refused is not None:
            return refused
        with self._lock:
            message_id = self._next_message
            self._next_message += 1
        self._record({**params, "chat_id": chat, "method": method})
        return _ok(self._message(message_id, chat))

    def _record(self, sent: dict[str, Any]) -> None:
        with self._arrived:
            self.sent.append(sent)
            self._arrived.notify_all()
        self._wake()

    @staticmethod
    def _message(message_id: int, chat: int | str, **content: Any) -> dict[str, Any]:
        found = {"message_id": message_id, "date": 1_760_000_000, "from": BOT}
        return {**found, "chat": {"id": chat, "type": "private"}, **content}

    def wait(self, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        """The first ``count`` messages and files the bot sent, once there are that many."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.sent) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.sent)} of {count} sends in {timeout} s")
                self._arrived.wait(left)
            return list(self.sent)

    async def until(self, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        """:meth:`wait` from a test's event loop, which goes on running meanwhile."""
        return await asyncio.to_thread(self.wait, count, timeout)

    def _send_chat_action(self, params: dict[str, Any]) -> Response:
        self.actions.append({**params, "chat_id": _chat(params)})
        return _ok(True)

    def _get_file(self, params: dict[str, Any]) -> Response:
        file_id = params.get("file_id")
        if file_id not in self.files:
            return _error(400, "Bad Request: invalid file_id")
        path, data = self.files[file_id]
        found = {"file_id": file_id, "file_unique_id": f"u{file_id}", "file_size": len(data)}
        return _ok({**found, "file_path": path})

    async def _file(self, request: Request) -> Response:
        if request.path_params["token"] != self.token:
            return Response(status_code=401)
        for path, data in self.files.values():
            if path == request.path_params["path"]:
                return Response(data, media_type="application/octet-stream")
        return Response(status_code=404)


async def _params(request: Request) -> dict[str, Any]:
    """The method's parameters, from the query, a JSON body or a form (values JSON-encoded)."""
    found: dict[str, Any] = dict(request.query_params)
    kind = request.headers.get("content-type", "")
    if kind.startswith("application/json"):
        found.update(json.loads(await request.body() or b"{}"))
    elif kind.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        form = await request.form()
        for key, value in form.items():
            if isinstance(value, UploadFile):
                found[key] = {"filename": value.filename, "content": await value.read()}
            else:
                found[key] = value if key in STRINGS else _decoded(value)
    return found


def _entities(text: str) -> list[dict[str, Any]]:
    """The entities Telegram's server marks in a text: a leading command, every mention.

    Offsets and lengths count UTF-16 code units, as Telegram's do.
    """

    def units(part: str) -> int:
        return len(part.encode("utf-16-le")) // 2

    found = []
    command = _COMMAND.match(text)
    if command:
        found.append({"type": "bot_command", "offset": 0, "length": units(command[0])})
    for mention in _MENTION.finditer(text):
        if command and mention.start() < command.end():
            continue
        offset = units(text[: mention.start()])
        found.append({"type": "mention", "offset": offset, "length": units(mention[0])})
    return found


def _decoded(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _chat(params: dict[str, Any]) -> int | str:
    chat = params.get("chat_id")
    return int(chat) if isinstance(chat, str) and chat.lstrip("-").isdigit() else chat


def _ok(result: Any) -> JSONResponse:
    return JSONResponse({"ok": True, "result": result})


def _error(code: int, description: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error_code": code, "description": description}, code)
