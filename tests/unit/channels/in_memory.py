"""In-memory stand-ins for what the inbox talks to: its two stores, a chat app and a butler.

Each keeps what the real one would have written (rows, replies, session requests)
where a test can read it; none needs a database, a network or a process. They
answer the methods the inbox and its helpers (threads, the live channel, the
router) call, with the real ones' meaning.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from butler.channels.base import Channel, ChannelState
from butler.channels.live import LiveChannel
from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.channels.pairing import digest
from butler.channels.switchboard import Router, Target
from butler.config.channels import ChannelSettings, TelegramSettings
from butler.spawner.request import TriggerRequest
from butler.spawner.result import SpawnerResult
from butler.store.conversations import MessageRecord


class Senders:
    """The paired senders of each channel, and the pairing codes not yet used."""

    def __init__(self) -> None:
        self.paired: set[tuple[str, str]] = set()
        self.codes: dict[tuple[str, str], bool] = {}  # (channel, digest) -> used

    def pair(self, channel: str, sender: str) -> None:
        self.paired.add((channel, sender))

    def offer(self, channel: str, code: str) -> None:
        self.codes[(channel, digest(code))] = False

    async def is_paired(self, channel: str, sender: str) -> bool:
        return (channel, sender) in self.paired

    async def redeem(self, channel: str, code_digest: str, sender: str, name: str | None) -> bool:
        if self.codes.get((channel, code_digest)) is not False:
            return False
        self.codes[(channel, code_digest)] = True
        self.paired.add((channel, sender))
        return True


class Conversations:
    """The channel_messages and conversations tables, as lists and dicts."""

    def __init__(self) -> None:
        self.messages: dict[int, dict[str, Any]] = {}
        self.conversations: dict[uuid.UUID, dict[str, Any]] = {}
        self._ids = itertools.count(1)

    def received(self, message: Inbound) -> int:
        """Record ``message`` as its channel's reader does; its row id."""
        row_id = next(self._ids)
        self.messages[row_id] = {
            "direction": "in",
            "channel": message.channel,
            "chat": message.chat,
            "body": message.text,
            "status": "received",
            "payload": {},
            "created_at": datetime.now(UTC),
        }
        return row_id

    def out(self) -> list[dict[str, Any]]:
        return [m for m in self.messages.values() if m["direction"] == "out"]

    async def record(self, message: MessageRecord) -> int | None:
        row_id = next(self._ids)
        self.messages[row_id] = {
            **message.__dict__,
            "created_at": datetime.now(UTC),
        }
        return row_id

    async def mark(
        self,
        message_id: int,
        status: str,
        *,
        conversation_id: uuid.UUID | None = None,
        butler: str | None = None,
        session_id: str | None = None,
        reason: str | None = None,
    ) -> None:
        row = self.messages[message_id]
        row["status"] = status
        for key, value in (("conversation_id", conversation_id), ("butler", butler)):
            if value is not None:
                row[key] = value
        if session_id is not None:
            row["session_id"] = session_id
        if reason is not None:
            row["payload"] = {**row["payload"], "refused": reason}

    async def told_since(self, channel: str, chat: str, start: str, since: datetime) -> bool:
        return any(
            m["channel"] == channel
            and m["chat"] == chat
            and m["body"].startswith(start)
            and m["created_at"] > since
            for m in self.out()
        )

    async def latest(
        self, channel: str, chat: str, thread: str, sender: str
    ) -> dict[str, Any] | None:
        key = (channel, chat, thread, sender)
        open_ones = [
            c for c in self.conversations.values() if c["key"] == key and c["closed_at"] is None
        ]
        return max(open_ones, key=lambda c: c["last_message_at"], default=None)

    async def start(
        self, channel: str, chat: str, thread: str, sender: str, butler: str
    ) -> uuid.UUID:
        await self.close(channel, chat, thread, sender)
        new = uuid.uuid4()
        self.conversations[new] = {
            "id": new,
            "key": (channel, chat, thread, sender),
            "butler": butler,
            "last_session_id": None,
            "last_message_at": datetime.now(UTC),
            "closed_at": None,
        }
        return new

    async def touch(self, conversation_id: uuid.UUID, session_id: str | None) -> None:
        conversation = self.conversations[conversation_id]
        conversation["last_message_at"] = datetime.now(UTC)
        if session_id is not None:
            conversation["last_session_id"] = session_id

    async def close(self, channel: str, chat: str, thread: str, sender: str) -> int:
        closing = [
            c
            for c in self.conversations.values()
            if c["key"] == (channel, chat, thread, sender) and c["closed_at"] is None
        ]
        for conversation in closing:
            conversation["closed_at"] = datetime.now(UTC)
        return len(closing)

    async def exchanges(self, conversation_id: uuid.UUID, limit: int) -> list[dict[str, Any]]:
        said = [
            {"direction": m["direction"], "body": m["body"]}
            for m in self.messages.values()
            if m.get("conversation_id") == conversation_id
        ]
        return said[-limit:]


class Chat(Channel):
    """A chat app that keeps what the bot sent; its kind and manners are the class's."""

    kind: ClassVar[str] = "telegram"
    shows_typing: ClassVar[bool] = False

    def __init__(self, settings: ChannelSettings | None = None) -> None:
        super().__init__(settings or TelegramSettings())
        self.sent: list[str] = []

    @property
    def max_reply_chars(self) -> int:
        return 4096

    async def connect(self, secret: str, position: str | None) -> str | None:
        return None

    async def receive(self) -> Batch:
        raise NotImplementedError("the tests hand the inbox its messages")

    async def send(self, to: Inbound, text: str) -> str:
        self.sent.append(text)
        return f"sent-{len(self.sent)}"

    async def fetch(self, attachment: AttachmentRef, limit: int) -> bytes:
        return b""

    async def close(self) -> None:
        return None


class Mail(Chat):
    """A channel that must not answer strangers (backscatter), as email."""

    kind: ClassVar[str] = "email"
    refuses_strangers: ClassVar[bool] = False


@dataclass
class Adapter:
    supports_resume: bool = True


@dataclass
class Butler:
    """A butler's spawner as the inbox sees it: takes a request, answers with ``answer``."""

    answer: SpawnerResult = field(default_factory=lambda: SpawnerResult(output="done"))
    adapter: Adapter = field(default_factory=Adapter)
    accepting: bool = True
    #: The requests started, in order.
    requests: list[TriggerRequest] = field(default_factory=list)
    #: Raised by the next ``start`` (then cleared): SessionNotFound, Rejected.
    refuse_next: Exception | None = None

    async def start(self, request: TriggerRequest) -> tuple[str, asyncio.Future[SpawnerResult]]:
        if self.refuse_next is not None:
            refusal, self.refuse_next = self.refuse_next, None
            raise refusal
        self.requests.append(request)
        session_id = str(uuid.uuid4())
        done: asyncio.Future[SpawnerResult] = asyncio.get_running_loop().create_future()
        answer = self.answer
        done.set_result(SpawnerResult(**{**answer.__dict__, "session_id": session_id}))
        return session_id, done

    async def trigger(self, request: TriggerRequest) -> SpawnerResult:
        """A classification session: this butler cannot tell."""
        return SpawnerResult(success=False, error="no classifier here")


def live(
    channel: Chat, conversations: Conversations, butlers: dict[str, Butler], *, bound: bool
) -> LiveChannel:
    """``channel`` with a router over ``butlers`` (the first is home)."""
    targets = {name: Target(name, f"the {name} butler", b) for name, b in butlers.items()}  # type: ignore[arg-type]
    router = Router(targets, next(iter(butlers)), bound=bound)
    state = ChannelState(channel.kind, butler=router.home, switchboard=not bound)
    return LiveChannel(channel, state, router, conversations)  # type: ignore[arg-type]
