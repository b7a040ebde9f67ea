"""The ``state`` table: the butler's JSON key-value store."""

from __future__ import annotations

from typing import Any

from butler.store.db import Database


class StateStore:
    """Get, set, list and delete JSON values by key."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, key: str) -> Any | None:
        return await self.db.fetchval("SELECT value FROM state WHERE key = $1", key)

    async def set(self, key: str, value: Any) -> None:
        await self.db.execute(
            "INSERT INTO state (key, value, updated_at) VALUES ($1, $2, now())"
            " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
            key,
            value,
        )

    async def list(self, prefix: str = "") -> dict[str, Any]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = await self.db.fetch(
            "SELECT key, value FROM state WHERE key LIKE $1 ORDER BY key", escaped + "%"
        )
        return {r["key"]: r["value"] for r in rows}

    async def delete(self, key: str) -> bool:
        result = await self.db.execute("DELETE FROM state WHERE key = $1", key)
        return result.endswith(" 1")
