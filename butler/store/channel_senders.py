"""The ``channel_senders`` and ``channel_pairing_codes`` tables: who a channel answers.

A code is stored only as its digest, and redeemed in one statement: two
senders racing with the same code cannot both be paired by it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from butler.store.db import Database


class SenderStore:
    """Pairing codes and paired senders of this butler's channels."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def add_code(self, channel: str, digest: str, expires_at: datetime) -> None:
        """Keep a new code's digest until ``expires_at``; drop codes long expired."""
        await self.db.execute(
            "DELETE FROM channel_pairing_codes WHERE expires_at < now() - interval '1 day'"
        )
        await self.db.execute(
            "INSERT INTO channel_pairing_codes (digest, channel, expires_at) VALUES ($1, $2, $3)",
            digest,
            channel,
            expires_at,
        )

    async def redeem(self, channel: str, digest: str, sender: str, name: str | None) -> bool:
        """Pair ``sender`` when ``digest`` is an unused, unexpired code of ``channel``."""
        async with self.db.pool.acquire() as conn, conn.transaction():
            used = await conn.fetchval(
                "UPDATE channel_pairing_codes SET used_at = now(), used_by = $3"
                " WHERE digest = $1 AND channel = $2 AND used_at IS NULL AND expires_at > now()"
                " RETURNING digest",
                digest,
                channel,
                sender,
            )
            if used is None:
                return False
            await conn.execute(
                "INSERT INTO channel_senders (channel, sender, display_name) VALUES ($1, $2, $3)"
                " ON CONFLICT (channel, sender) DO UPDATE"
                " SET display_name = EXCLUDED.display_name, paired_at = now()",
                channel,
                sender,
                name,
            )
        return True

    async def is_paired(self, channel: str, sender: str) -> bool:
        found = await self.db.fetchval(
            "SELECT 1 FROM channel_senders WHERE channel = $1 AND sender = $2", channel, sender
        )
        return found is not None

    async def senders(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Every paired sender (of ``channel`` when given), oldest pairing first."""
        rows = await self.db.fetch(
            "SELECT channel, sender, display_name, paired_at FROM channel_senders"
            " WHERE $1::text IS NULL OR channel = $1 ORDER BY paired_at, channel, sender",
            channel,
        )
        return [dict(row) for row in rows]

    async def unpair(self, channel: str, sender: str) -> bool:
        """Forget ``sender``; whether it was paired."""
        gone = await self.db.fetchval(
            "DELETE FROM channel_senders WHERE channel = $1 AND sender = $2 RETURNING sender",
            channel,
            sender,
        )
        return gone is not None
