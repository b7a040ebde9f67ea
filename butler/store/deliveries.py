"""The ``deliveries`` table: every message sent to the person, per channel, every attempt.

The database is the outbox: a message held for quiet hours or waiting for
its next attempt is a row, so a restarted daemon sends it on. An attempt is
claimed by one conditional ``UPDATE`` (``status = 'sending'``), so a row is
never sent by two tasks at once; a crash while sending leaves it ``sending``,
and the next start sends it again (at least once, never lost).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from butler.store.db import Database
from butler.store.sessions import row_dict
from butler.store.text import clean_text

#: Statuses of a row still to be sent.
OPEN = ("held", "pending", "sending")


@dataclass(frozen=True)
class NewDelivery:
    """One message to one channel, before its first attempt."""

    message: uuid.UUID
    session_id: str | None
    source: str
    channel: str
    priority: str
    kind: str
    title: str
    body: str
    attachment: str | None
    status: str
    next_at: datetime | None
    created_at: datetime
    id: uuid.UUID
    #: Why it was refused (a row of status ``refused``).
    error: str | None = None


class DeliveryStore:
    """Record deliveries and their attempts; find those that are due."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(
        self, rows: list[NewDelivery], attachment: tuple[str, bytes] | None = None
    ) -> None:
        """Record one message's rows (and its attachment) all at once."""
        async with self.db.pool.acquire() as conn, conn.transaction():
            if attachment is not None and rows:
                await conn.execute(
                    "INSERT INTO delivery_attachments (message, name, content) VALUES ($1, $2, $3)",
                    rows[0].message,
                    *attachment,
                )
            await conn.executemany(
                "INSERT INTO deliveries (id, message, session_id, source, channel, priority,"
                " kind, title, body, attachment, status, next_at, created_at, error)"
                " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                [_values(row) for row in rows],
            )

    async def messages_since(self, since: datetime) -> int:
        """How many messages were recorded since ``since`` (the owner's tests aside)."""
        return await self.db.fetchval(
            "SELECT count(DISTINCT message) FROM deliveries"
            " WHERE created_at > $1 AND source <> 'test' AND status <> 'refused'",
            since,
        )

    async def messages_of(self, session_id: str) -> int:
        """How many messages the session's own notify calls recorded."""
        return await self.db.fetchval(
            "SELECT count(DISTINCT message) FROM deliveries"
            " WHERE session_id = $1 AND source = 'tool' AND status <> 'refused'",
            uuid.UUID(session_id),
        )

    async def claim_due(self, now: datetime, limit: int = 50) -> list[dict[str, Any]]:
        """Rows whose time has come, marked ``sending`` by this call alone; ``was_held``
        says which waited for quiet hours to end."""
        rows = await self.db.fetch(
            "WITH due AS (SELECT id, status FROM deliveries"
            " WHERE status IN ('held', 'pending') AND next_at <= $1"
            " ORDER BY next_at, created_at LIMIT $2 FOR UPDATE SKIP LOCKED)"
            " UPDATE deliveries d SET status = 'sending' FROM due WHERE d.id = due.id"
            " RETURNING d.*, due.status = 'held' AS was_held",
            now,
            limit,
        )
        return sorted((row_dict(r) for r in rows), key=lambda r: (r["next_at"], r["created_at"]))

    async def merge(self, digest: dict[str, Any], body: str, merged: list[str]) -> None:
        """``digest`` (a claimed row) now carries ``body``, the held messages ``merged``
        into it; each of those is ``merged``, naming the digest's row."""
        text, _ = clean_text(body)
        async with self.db.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "UPDATE deliveries SET body = $2, title = $3 WHERE id = $1",
                uuid.UUID(digest["id"]),
                text,
                digest["title"],
            )
            await conn.execute(
                "UPDATE deliveries SET status = 'merged', next_at = NULL, error = $2"
                " WHERE id = ANY($1::uuid[])",
                [uuid.UUID(m) for m in merged],
                f"merged into the quiet-hours digest {digest['id']}",
            )

    async def next_due(self) -> datetime | None:
        """When the earliest waiting row is due, if any waits."""
        return await self.db.fetchval(
            "SELECT min(next_at) FROM deliveries WHERE status IN ('held', 'pending')"
        )

    async def resend_interrupted(self, now: datetime) -> int:
        """Rows left ``sending`` by a daemon that stopped: due again now."""
        done = await self.db.execute(
            "UPDATE deliveries SET status = 'pending', next_at = $1 WHERE status = 'sending'", now
        )
        return int(done.split()[-1])

    async def attempted(
        self,
        delivery_id: str,
        attempt: dict[str, Any],
        status: str,
        next_at: datetime | None = None,
    ) -> None:
        """Append ``attempt`` to the row and move it to ``status``."""
        error, _ = clean_text(attempt.get("error") or "")
        await self.db.execute(
            "UPDATE deliveries SET attempts = attempts || $2::jsonb, status = $3, next_at = $4,"
            " error = $5, delivered_at = CASE WHEN $3 = 'delivered' THEN $6::timestamptz END"
            " WHERE id = $1",
            uuid.UUID(delivery_id),
            [{**attempt, "error": error or None}],
            status,
            next_at,
            error or None,
            datetime.fromisoformat(attempt["at"]),
        )

    async def hold(self, delivery_id: str, until: datetime) -> None:
        """Put the row back to wait until ``until`` (quiet hours)."""
        await self.db.execute(
            "UPDATE deliveries SET status = 'held', next_at = $2 WHERE id = $1",
            uuid.UUID(delivery_id),
            until,
        )

    async def attachment(self, message: str) -> tuple[str, bytes] | None:
        """The message's attachment (name, content), while any of its rows is open."""
        row = await self.db.fetchrow(
            "SELECT name, content FROM delivery_attachments WHERE message = $1",
            uuid.UUID(message),
        )
        return (row["name"], bytes(row["content"])) if row else None

    async def forget_attachment_when_done(self, message: str) -> None:
        """Drop the message's attachment once no row of it is still to be sent."""
        await self.db.execute(
            "DELETE FROM delivery_attachments WHERE message = $1 AND NOT EXISTS ("
            " SELECT 1 FROM deliveries WHERE message = $1"
            " AND status IN ('held', 'pending', 'sending'))",
            uuid.UUID(message),
        )

    async def recent(self, limit: int) -> list[dict[str, Any]]:
        """The latest deliveries of every session and source, newest first, without bodies."""
        rows = await self.db.fetch(
            "SELECT id, message, session_id, channel, source, priority, title, status,"
            " attempts, error, next_at, created_at, delivered_at"
            " FROM deliveries ORDER BY created_at DESC, channel LIMIT $1",
            limit,
        )
        return [row_dict(r) for r in rows]

    async def for_session(self, session_id: str) -> list[dict[str, Any]]:
        """The session's deliveries, oldest first, without their bodies."""
        try:
            key = uuid.UUID(session_id)
        except ValueError:
            return []
        rows = await self.db.fetch(
            "SELECT id, message, channel, source, priority, title, attachment, status,"
            " attempts, error, next_at, created_at, delivered_at"
            " FROM deliveries WHERE session_id = $1 ORDER BY created_at, channel",
            key,
        )
        return [row_dict(r) for r in rows]

    async def get(self, delivery_id: str) -> dict[str, Any] | None:
        row = await self.db.fetchrow(
            "SELECT * FROM deliveries WHERE id = $1", uuid.UUID(delivery_id)
        )
        return row_dict(row) if row else None


def _values(row: NewDelivery) -> tuple[Any, ...]:
    title, _ = clean_text(row.title)
    body, _ = clean_text(row.body)
    return (
        row.id,
        row.message,
        uuid.UUID(row.session_id) if row.session_id else None,
        row.source,
        row.channel,
        row.priority,
        row.kind,
        title,
        body,
        row.attachment,
        row.status,
        row.next_at,
        row.created_at,
        clean_text(row.error)[0] if row.error else None,
    )
