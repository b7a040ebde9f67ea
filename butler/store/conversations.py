"""The ``conversations``, ``channel_messages`` and ``channel_cursors`` tables.

An inbound message is recorded once (its channel's own id is unique) before
the channel is told it was read, so a message delivered again after a
reconnect or a restart is recognised, and one recorded but never answered is
found again at the next start.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from butler.store.db import Database
from butler.store.text import clean_json, clean_text

#: Longest message body kept; a channel bounds what it takes well below this.
MAX_BODY_CHARS = 200_000
#: Statuses of a message not yet answered (picked up again at the next start).
OPEN = ("received", "handling")


def _text(value: str) -> str:
    return clean_text(value[:MAX_BODY_CHARS])[0]


@dataclass(frozen=True)
class MessageRecord:
    """One message in or out of a channel, as the table keeps it."""

    channel: str
    direction: str
    external_id: str
    chat: str
    sender: str
    body: str
    thread: str = ""
    display_name: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)
    payload: dict[str, Any] = field(default_factory=dict)
    conversation_id: uuid.UUID | None = None
    butler: str | None = None
    session_id: str | None = None
    status: str = "received"


class ConversationStore:
    """Conversations, the messages of every channel, and where each channel left off."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, message: MessageRecord) -> int | None:
        """Keep ``message``; its row id, or None when the channel delivered it before."""
        return await self.db.fetchval(
            "INSERT INTO channel_messages (channel, direction, external_id, conversation_id,"
            " chat, thread, sender, display_name, body, attachments, payload, butler,"
            " session_id, status)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
            " ON CONFLICT (channel, direction, external_id) DO NOTHING RETURNING id",
            message.channel,
            message.direction,
            message.external_id[:500],
            message.conversation_id,
            _text(message.chat),
            _text(message.thread),
            _text(message.sender),
            clean_text(message.display_name)[0] if message.display_name else None,
            _text(message.body),
            clean_json(message.attachments)[0],
            clean_json(message.payload)[0],
            message.butler,
            uuid.UUID(message.session_id) if message.session_id else None,
            message.status,
        )

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
        """Set a message's status, and what it became part of once known; ``reason`` (why
        it was refused) is kept in its payload as ``refused``."""
        await self.db.execute(
            "UPDATE channel_messages SET status = $2,"
            " conversation_id = COALESCE($3, conversation_id), butler = COALESCE($4, butler),"
            " session_id = COALESCE($5, session_id),"
            " payload = CASE WHEN $6::text IS NULL THEN payload"
            " ELSE payload || jsonb_build_object('refused', $6::text) END WHERE id = $1",
            message_id,
            status,
            conversation_id,
            butler,
            uuid.UUID(session_id) if session_id else None,
            clean_text(reason[:500])[0] if reason else None,
        )

    async def told_since(self, channel: str, chat: str, start: str, since: datetime) -> bool:
        """Whether a reply starting with ``start`` went to ``chat`` after ``since``."""
        escaped = start.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found = await self.db.fetchval(
            "SELECT 1 FROM channel_messages WHERE channel = $1 AND direction = 'out'"
            " AND chat = $2 AND body LIKE $3 AND created_at > $4 LIMIT 1",
            channel,
            chat,
            escaped + "%",
            since,
        )
        return found is not None

    async def refused(self, limit: int) -> list[dict[str, Any]]:
        """The latest inbound messages refused, newest first, with why when it was said."""
        rows = await self.db.fetch(
            "SELECT id, channel, chat, sender, display_name, created_at,"
            " payload->>'refused' AS reason FROM channel_messages"
            " WHERE direction = 'in' AND status = 'refused' ORDER BY id DESC LIMIT $1",
            limit,
        )
        return [dict(row) for row in rows]

    async def open_messages(self, channel: str) -> list[dict[str, Any]]:
        """Inbound messages of ``channel`` recorded but not answered, oldest first."""
        rows = await self.db.fetch(
            "SELECT * FROM channel_messages WHERE channel = $1 AND direction = 'in'"
            " AND status IN ('received', 'handling') ORDER BY id",
            channel,
        )
        return [dict(row) for row in rows]

    async def latest(
        self, channel: str, chat: str, thread: str, sender: str
    ) -> dict[str, Any] | None:
        """The sender's most recent open conversation in this chat and thread."""
        row = await self.db.fetchrow(
            "SELECT * FROM conversations WHERE channel = $1 AND chat = $2 AND thread = $3"
            " AND sender = $4 AND closed_at IS NULL ORDER BY last_message_at DESC LIMIT 1",
            channel,
            chat,
            thread,
            sender,
        )
        return dict(row) if row else None

    async def asked(
        self, channel: str, chat: str, thread: str, sender: str, since: datetime
    ) -> dict[str, Any] | None:
        """The sender's latest message here, since ``since``, that no butler could be picked
        for (status ``asked``): kept for the butler the person picks next."""
        row = await self.db.fetchrow(
            "SELECT * FROM channel_messages WHERE channel = $1 AND direction = 'in'"
            " AND chat = $2 AND thread = $3 AND sender = $4 AND status = 'asked'"
            " AND created_at > $5 ORDER BY id DESC LIMIT 1",
            channel,
            chat,
            thread,
            sender,
            since,
        )
        return dict(row) if row else None

    async def signed_before(self, channel: str, sender: str, signature: str, before: int) -> bool:
        """Whether a message of ``sender`` recorded before row ``before`` carried the same
        proof (``signature``, in its payload's ``reply``)."""
        found = await self.db.fetchval(
            "SELECT 1 FROM channel_messages WHERE channel = $1 AND direction = 'in'"
            " AND sender = $2 AND payload->'reply'->>'signature' = $3 AND id < $4 LIMIT 1",
            channel,
            sender,
            signature,
            before,
        )
        return found is not None

    async def status_of(self, message_id: int) -> str | None:
        return await self.db.fetchval(
            "SELECT status FROM channel_messages WHERE id = $1", message_id
        )

    async def following(
        self, channel: str, chat: str, thread: str, sender: str, after: int, limit: int
    ) -> list[dict[str, Any]]:
        """The sender's messages here recorded after ``after`` and not yet taken up,
        oldest first."""
        rows = await self.db.fetch(
            "SELECT * FROM channel_messages WHERE channel = $1 AND direction = 'in'"
            " AND chat = $2 AND thread = $3 AND sender = $4 AND id > $5"
            " AND status = 'received' ORDER BY id LIMIT $6",
            channel,
            chat,
            thread,
            sender,
            after,
            limit,
        )
        return [dict(row) for row in rows]

    async def waiting(self, channel: str, chat: str, thread: str | None, sender: str) -> int:
        """The sender's messages in this chat and ``thread`` (None: in any thread of it)
        recorded and not yet taken up."""
        found = await self.db.fetchval(
            "SELECT count(*) FROM channel_messages WHERE channel = $1 AND direction = 'in'"
            " AND chat = $2 AND ($3::text IS NULL OR thread = $3) AND sender = $4"
            " AND status = 'received'",
            channel,
            chat,
            thread,
            sender,
        )
        return int(found or 0)

    async def followed(
        self, channel: str, chat: str, sender: str, external_ids: list[str]
    ) -> dict[str, Any] | None:
        """The sender's own conversation one of ``external_ids`` (messages in or out of
        ``chat``) belongs to, the latest such; open or closed."""
        row = await self.db.fetchrow(
            "SELECT c.* FROM channel_messages m JOIN conversations c ON c.id = m.conversation_id"
            " WHERE m.channel = $1 AND m.direction IN ('in', 'out') AND m.external_id = ANY($3)"
            " AND m.chat = $2 AND c.sender = $4 ORDER BY m.id DESC LIMIT 1",
            channel,
            chat,
            [e[:500] for e in external_ids],
            sender,
        )
        return dict(row) if row else None

    async def reopen(self, conversation_id: uuid.UUID) -> None:
        """Make a conversation its sender's current one in its chat and thread again (a reply
        to one of its messages): the others there close, it opens."""
        await self.db.execute(
            "UPDATE conversations o SET closed_at = now() FROM conversations c"
            " WHERE c.id = $1 AND o.id <> c.id AND o.channel = c.channel AND o.chat = c.chat"
            " AND o.thread = c.thread AND o.sender = c.sender AND o.closed_at IS NULL",
            conversation_id,
        )
        await self.db.execute(
            "UPDATE conversations SET closed_at = NULL WHERE id = $1", conversation_id
        )

    async def start(
        self, channel: str, chat: str, thread: str, sender: str, butler: str
    ) -> uuid.UUID:
        """A new conversation of ``sender`` with ``butler``; earlier ones in the chat close."""
        await self.close(channel, chat, thread, sender)
        new = uuid.uuid4()
        await self.db.execute(
            "INSERT INTO conversations (id, channel, chat, thread, sender, butler)"
            " VALUES ($1, $2, $3, $4, $5, $6)",
            new,
            channel,
            _text(chat),
            _text(thread),
            _text(sender),
            butler,
        )
        return new

    async def touch(self, conversation_id: uuid.UUID, session_id: str | None) -> None:
        """A message was answered: the conversation goes on from ``session_id``."""
        await self.db.execute(
            "UPDATE conversations SET last_message_at = now(),"
            " last_session_id = COALESCE($2, last_session_id) WHERE id = $1",
            conversation_id,
            uuid.UUID(session_id) if session_id else None,
        )

    async def close(self, channel: str, chat: str, thread: str, sender: str) -> int:
        """Close the sender's open conversations in this chat (``/new``); how many."""
        result = await self.db.execute(
            "UPDATE conversations SET closed_at = now() WHERE channel = $1 AND chat = $2"
            " AND thread = $3 AND sender = $4 AND closed_at IS NULL",
            channel,
            chat,
            thread,
            sender,
        )
        return int(result.split()[-1])

    async def exchanges(self, conversation_id: uuid.UUID, limit: int) -> list[dict[str, Any]]:
        """The conversation's last ``limit`` messages, oldest first."""
        rows = await self.db.fetch(
            "SELECT * FROM (SELECT * FROM channel_messages WHERE conversation_id = $1"
            " ORDER BY id DESC LIMIT $2) AS recent ORDER BY id",
            conversation_id,
            limit,
        )
        return [dict(row) for row in rows]

    async def listing(
        self, limit: int, before: datetime | None = None, channel: str | None = None
    ) -> list[dict[str, Any]]:
        """Conversations (of ``channel``, or all), most recently active first, with their
        message counts and the first words of their first message (``opening``)."""
        rows = await self.db.fetch(
            "SELECT c.*, (SELECT count(*) FROM channel_messages m"
            " WHERE m.conversation_id = c.id) AS messages,"
            " (SELECT left(m.body, 200) FROM channel_messages m WHERE m.conversation_id = c.id"
            " AND m.direction = 'in' ORDER BY m.id LIMIT 1) AS opening"
            " FROM conversations c WHERE ($2::timestamptz IS NULL OR c.last_message_at < $2)"
            " AND ($3::text IS NULL OR c.channel = $3)"
            " ORDER BY c.last_message_at DESC LIMIT $1",
            limit,
            before,
            channel,
        )
        return [dict(row) for row in rows]

    async def get(self, conversation_id: uuid.UUID) -> dict[str, Any] | None:
        row = await self.db.fetchrow("SELECT * FROM conversations WHERE id = $1", conversation_id)
        return dict(row) if row else None

    async def cursor(self, channel: str) -> str | None:
        """Where ``channel`` left off reading, or None before its first read."""
        return await self.db.fetchval(
            "SELECT position FROM channel_cursors WHERE channel = $1", channel
        )

    async def set_cursor(self, channel: str, position: str) -> None:
        await self.db.execute(
            "INSERT INTO channel_cursors (channel, position) VALUES ($1, $2)"
            " ON CONFLICT (channel) DO UPDATE SET position = EXCLUDED.position, updated_at = now()",
            channel,
            position,
        )
