"""In-memory stand-ins for what the inbox talks to: its two stores, a chat app and a butler.

Each keeps what the real one would have written (rows, replies, session requests)
where a test can read it; none needs a database, a network or a process. They
answer the methods the inbox and its helpers (threads, the live channel, the
router) call, with the real ones' meaning.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from butler.channels.base import Channel, ChannelState
from butler.channels.inbox import Inbox
from butler.channels.live import LiveChannel
from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.channels.pairing import digest
from butler.channels.service import record_of
from butler.channels.switchboard import Router, Target
from butler.config.channels import ChannelSettings, TelegramSettings
from butler.spawner.request import TriggerRequest
from butler.spawner.result import SpawnerResult
from butler.store.conversations import OPEN, MessageRecord


class Senders:
    """The channel_senders and channel_pairing_codes tables: who is paired, which codes
    are offered (by digest, until they expire) and who used them."""

    def __init__(self) -> None:
        #: (channel, sender) -> display name and when they paired.
        self.paired: dict[tuple[str, str], dict[str, Any]] = {}
        #: (channel, digest) -> expires_at and used_at.
        self.codes: dict[tuple[str, str], dict[str, Any]] = {}

    def pair(self, channel: str, sender: str, name: str | None = None) -> None:
        self.paired[(channel, sender)] = {"display_name": name, "paired_at": datetime.now(UTC)}

    def offer(self, channel: str, code: str, valid_for: timedelta = timedelta(hours=1)) -> None:
        self.codes[(channel, digest(code))] = {
            "expires_at": datetime.now(UTC) + valid_for,
            "used_at": None,
        }

    async def add_code(self, channel: str, digest: str, expires_at: datetime) -> None:
        self.codes[(channel, digest)] = {"expires_at": expires_at, "used_at": None}

    async def is_paired(self, channel: str, sender: str) -> bool:
        return (channel, sender) in self.paired

    async def redeem(self, channel: str, digest: str, sender: str, name: str | None) -> bool:
        code = self.codes.get((channel, digest))
        now = datetime.now(UTC)
        if code is None or code["used_at"] is not None or code["expires_at"] <= now:
            return False
        code["used_at"], code["used_by"] = now, sender
        self.pair(channel, sender, name)
        return True

    async def senders(self, channel: str | None = None) -> list[dict[str, Any]]:
        rows = [
            {"channel": c, "sender": s, **about}
            for (c, s), about in self.paired.items()
            if channel is None or c == channel
        ]
        return sorted(rows, key=lambda r: (r["paired_at"], r["channel"], r["sender"]))

    async def unpair(self, channel: str, sender: str) -> bool:
        return self.paired.pop((channel, sender), None) is not None


class Conversations:
    """The channel_messages, conversations and channel_cursors tables, as dicts.

    Rows carry the real tables' columns (``session_id`` and ``last_session_id`` as
    UUIDs, as the database returns them), and each method answers what its SQL in
    :class:`~butler.store.conversations.ConversationStore` would.
    """

    def __init__(self) -> None:
        self.messages: dict[int, dict[str, Any]] = {}
        self.conversations: dict[uuid.UUID, dict[str, Any]] = {}
        self.cursors: dict[str, str] = {}
        self._ids = itertools.count(1)

    def received(self, message: Inbound) -> int:
        """Record ``message`` as its channel's reader does (the service's record); its row
        id."""
        row_id = self._insert(record_of(message))
        assert row_id is not None, f"message {message.external_id} was delivered before"
        return row_id

    def out(self) -> list[dict[str, Any]]:
        return [m for m in self.messages.values() if m["direction"] == "out"]

    def _insert(self, message: MessageRecord) -> int | None:
        key = (message.channel, message.direction, message.external_id[:500])
        if any((m["channel"], m["direction"], m["external_id"]) == key for m in self._rows()):
            return None  # ON CONFLICT DO NOTHING
        row_id = next(self._ids)
        self.messages[row_id] = {
            **copy.deepcopy(message.__dict__),
            "id": row_id,
            "external_id": message.external_id[:500],
            "session_id": uuid.UUID(message.session_id) if message.session_id else None,
            "created_at": datetime.now(UTC),
        }
        return row_id

    def _rows(self, direction: str | None = None) -> list[dict[str, Any]]:
        """The messages in id order (of ``direction`` when given)."""
        return [
            m
            for _, m in sorted(self.messages.items())
            if direction is None or m["direction"] == direction
        ]

    async def record(self, message: MessageRecord) -> int | None:
        return self._insert(message)

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
        row = self.messages.get(message_id)
        if row is None:
            return  # an UPDATE of no row
        row["status"] = status
        if conversation_id is not None:
            row["conversation_id"] = conversation_id
        if butler is not None:
            row["butler"] = butler
        if session_id:
            row["session_id"] = uuid.UUID(session_id)
        if reason:
            row["payload"] = {**row["payload"], "refused": reason[:500]}

    async def told_since(self, channel: str, chat: str, start: str, since: datetime) -> bool:
        return any(
            m["channel"] == channel
            and m["chat"] == chat
            and m["body"].startswith(start)
            and m["created_at"] > since
            for m in self._rows("out")
        )

    async def refused(self, limit: int) -> list[dict[str, Any]]:
        rows = [m for m in reversed(self._rows("in")) if m["status"] == "refused"][:limit]
        return [
            {
                **{k: m[k] for k in ("id", "channel", "chat", "sender", "display_name")},
                "created_at": m["created_at"],
                "reason": m["payload"].get("refused"),
            }
            for m in rows
        ]

    async def open_messages(self, channel: str) -> list[dict[str, Any]]:
        return [
            dict(m) for m in self._rows("in") if m["channel"] == channel and m["status"] in OPEN
        ]

    def _theirs(
        self, channel: str, chat: str, thread: str | None, sender: str
    ) -> list[dict[str, Any]]:
        """The sender's inbound messages in ``chat`` (and ``thread``, when given), by id."""
        return [
            m
            for m in self._rows("in")
            if (m["channel"], m["chat"], m["sender"]) == (channel, chat, sender)
            and (thread is None or m["thread"] == thread)
        ]

    async def asked(
        self, channel: str, chat: str, thread: str, sender: str, since: datetime
    ) -> dict[str, Any] | None:
        kept = [
            m
            for m in self._theirs(channel, chat, thread, sender)
            if m["status"] == "asked" and m["created_at"] > since
        ]
        return dict(kept[-1]) if kept else None

    async def signed_before(self, channel: str, sender: str, signature: str, before: int) -> bool:
        return any(
            (m["channel"], m["sender"]) == (channel, sender)
            and m["id"] < before
            and m["payload"].get("reply", {}).get("signature") == signature
            for m in self._rows("in")
        )

    async def status_of(self, message_id: int) -> str | None:
        row = self.messages.get(message_id)
        return row["status"] if row else None

    async def following(
        self, channel: str, chat: str, thread: str, sender: str, after: int, limit: int
    ) -> list[dict[str, Any]]:
        later = [
            dict(m)
            for m in self._theirs(channel, chat, thread, sender)
            if m["id"] > after and m["status"] == "received"
        ]
        return later[:limit]

    async def waiting(self, channel: str, chat: str, thread: str | None, sender: str) -> int:
        theirs = self._theirs(channel, chat, thread, sender)
        return sum(1 for m in theirs if m["status"] == "received")

    async def followed(
        self, channel: str, chat: str, sender: str, external_ids: list[str]
    ) -> dict[str, Any] | None:
        ids = {e[:500] for e in external_ids}
        for m in reversed(self._rows()):
            if m["direction"] not in ("in", "out") or m["channel"] != channel:
                continue
            if m["chat"] != chat or m["external_id"] not in ids:
                continue
            conversation = self.conversations.get(m.get("conversation_id"))  # type: ignore[arg-type]
            if conversation is not None and conversation["sender"] == sender:
                return dict(conversation)
        return None

    async def reopen(self, conversation_id: uuid.UUID) -> None:
        this = self.conversations.get(conversation_id)
        if this is None:
            return
        key = _key(this)
        for other in self.conversations.values():
            if other is not this and _key(other) == key and other["closed_at"] is None:
                other["closed_at"] = datetime.now(UTC)
        this["closed_at"] = None

    async def latest(
        self, channel: str, chat: str, thread: str, sender: str
    ) -> dict[str, Any] | None:
        key = (channel, chat, thread, sender)
        open_ones = [
            c for c in self.conversations.values() if _key(c) == key and c["closed_at"] is None
        ]
        found = max(open_ones, key=lambda c: c["last_message_at"], default=None)
        return dict(found) if found else None

    async def start(
        self, channel: str, chat: str, thread: str, sender: str, butler: str
    ) -> uuid.UUID:
        await self.close(channel, chat, thread, sender)
        new = uuid.uuid4()
        now = datetime.now(UTC)
        self.conversations[new] = {
            "id": new,
            "channel": channel,
            "chat": chat,
            "thread": thread,
            "sender": sender,
            "butler": butler,
            "last_session_id": None,
            "created_at": now,
            "last_message_at": now,
            "closed_at": None,
        }
        return new

    async def touch(self, conversation_id: uuid.UUID, session_id: str | None) -> None:
        conversation = self.conversations.get(conversation_id)
        if conversation is None:
            return
        conversation["last_message_at"] = datetime.now(UTC)
        if session_id:
            conversation["last_session_id"] = uuid.UUID(session_id)

    async def close(self, channel: str, chat: str, thread: str, sender: str) -> int:
        key = (channel, chat, thread, sender)
        closing = [
            c for c in self.conversations.values() if _key(c) == key and c["closed_at"] is None
        ]
        for conversation in closing:
            conversation["closed_at"] = datetime.now(UTC)
        return len(closing)

    async def exchanges(self, conversation_id: uuid.UUID, limit: int) -> list[dict[str, Any]]:
        said = [dict(m) for m in self._rows() if m.get("conversation_id") == conversation_id]
        return said[-limit:] if limit > 0 else []

    async def get(self, conversation_id: uuid.UUID) -> dict[str, Any] | None:
        found = self.conversations.get(conversation_id)
        return dict(found) if found else None

    async def cursor(self, channel: str) -> str | None:
        return self.cursors.get(channel)

    async def set_cursor(self, channel: str, position: str) -> None:
        self.cursors[channel] = position


def _key(conversation: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        conversation["channel"],
        conversation["chat"],
        conversation["thread"],
        conversation["sender"],
    )


class Chat(Channel):
    """A chat app that keeps what the bot sent; its kind and manners are the class's."""

    kind: ClassVar[str] = "telegram"
    shows_typing: ClassVar[bool] = False

    def __init__(self, settings: ChannelSettings | None = None) -> None:
        super().__init__(settings or TelegramSettings())
        self.sent: list[str] = []
        #: What each attachment holds, by its ref (else a line of text).
        self.files: dict[str, bytes] = {}

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
        return self.files.get(attachment.ref, b"a line of text")

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
class Runtime:
    max_concurrent_sessions: int = 2


@dataclass
class Config:
    runtime: Runtime = field(default_factory=Runtime)


@dataclass
class Sessions:
    """A butler's sessions table, as ``/status`` reads it: its failed sessions, newest first."""

    failed: list[dict[str, Any]] = field(default_factory=list)

    async def list(self, limit: int = 50, status: str | None = None) -> list[dict[str, Any]]:
        return self.failed[:limit] if status in (None, "failed") else []


@dataclass
class Butler:
    """A butler's spawner as the inbox sees it: takes a request, answers with ``answer``."""

    answer: SpawnerResult = field(default_factory=lambda: SpawnerResult(output="done"))
    adapter: Adapter = field(default_factory=Adapter)
    accepting: bool = True
    config: Config = field(default_factory=Config)
    sessions: Sessions = field(default_factory=Sessions)
    #: Sessions admitted and waiting for a slot.
    waiting: int = 0
    #: Whether sessions keep running until :meth:`finish` (else they end at once).
    hold: bool = False
    #: The requests started, in order.
    requests: list[TriggerRequest] = field(default_factory=list)
    #: Raised by the next ``start`` (then cleared): SessionNotFound, Rejected.
    refuse_next: Exception | None = None
    #: The sessions started and not yet ended.
    held: list[tuple[str, asyncio.Future[SpawnerResult]]] = field(default_factory=list)

    @property
    def running(self) -> int:
        """Sessions holding a slot now."""
        return sum(1 for _, done in self.held if not done.done())

    async def start(self, request: TriggerRequest) -> tuple[str, asyncio.Future[SpawnerResult]]:
        if self.refuse_next is not None:
            refusal, self.refuse_next = self.refuse_next, None
            raise refusal
        self.requests.append(request)
        session_id = str(uuid.uuid4())
        done: asyncio.Future[SpawnerResult] = asyncio.get_running_loop().create_future()
        if self.hold:
            self.held.append((session_id, done))
        else:
            done.set_result(self._result(session_id))
        return session_id, done

    def finish(self) -> None:
        """End every held session still running with ``answer``."""
        for session_id, done in self.held:
            if not done.done():
                done.set_result(self._result(session_id))

    def _result(self, session_id: str) -> SpawnerResult:
        return SpawnerResult(**{**self.answer.__dict__, "session_id": session_id})

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


#: A paired-able sender on Telegram, as the inbox tests use her.
ALICE = Inbound("telegram", "1", "1001", "", "1001", "Alice", "what is due today?")


class Desk:
    """An inbox over in-memory stores, one chat app and its butlers (the first is home)."""

    def __init__(self, *names: str, channel: Chat | None = None, bound: bool = False) -> None:
        self.senders, self.conversations = Senders(), Conversations()
        self.butlers = {name: Butler() for name in names or ("tester",)}
        self.chat = channel or Chat()
        self.link = live(self.chat, self.conversations, self.butlers, bound=bound)
        self.inbox = Inbox(self.senders, self.conversations)  # type: ignore[arg-type]
        self._n = 0

    def receive(self, text: str, message: Inbound = ALICE, **changes: object) -> Inbound:
        """Record ``text`` as a new message of ``message``'s sender, as the channel's reader
        does; the message, not yet handled."""
        self._n += 1
        message = replace(
            message, channel=self.chat.kind, external_id=str(self._n), text=text, **changes
        )
        self.conversations.received(message)
        return message

    async def handle(self, message: Inbound) -> dict:
        """Hand a recorded message to the inbox; its row afterwards."""
        [row_id] = [
            i
            for i, m in self.conversations.messages.items()
            if m["direction"] == "in" and m["external_id"] == message.external_id
        ]
        await self.inbox.handle(self.link, message, row_id)
        return self.conversations.messages[row_id]

    async def send(self, text: str, message: Inbound = ALICE, **changes: object) -> dict:
        """Deliver ``text`` as a new message of ``message``'s sender; its row afterwards."""
        return await self.handle(self.receive(text, message, **changes))
