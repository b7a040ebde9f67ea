"""Credentials for runtimes: the ``credentials`` table first, the environment second.

Values never reach a log line or a session record; only names do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime

from butler.store.db import Database


class CredentialStore:
    """Resolve a credential by name, database first with environment fallback."""

    def __init__(self, db: Database | None, environ: Mapping[str, str] | None = None) -> None:
        self.db = db
        self.environ = os.environ if environ is None else environ

    async def set(self, name: str, value: str) -> None:
        """Store ``value`` under ``name``, replacing any earlier one."""
        assert self.db is not None
        await self.db.execute(
            "INSERT INTO credentials (name, value) VALUES ($1, $2)"
            " ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = now()",
            name,
            value,
        )

    async def names(self) -> list[tuple[str, datetime]]:
        """Every stored name with when it was last set; never a value."""
        assert self.db is not None
        rows = await self.db.fetch("SELECT name, updated_at FROM credentials ORDER BY name")
        return [(r["name"], r["updated_at"]) for r in rows]

    async def delete(self, name: str) -> bool:
        """Forget ``name``; whether it was stored."""
        assert self.db is not None
        deleted = await self.db.fetchval(
            "DELETE FROM credentials WHERE name = $1 RETURNING name", name
        )
        return deleted is not None

    async def resolve(self, name: str) -> str | None:
        """The credential's value, or None when neither source has it."""
        if self.db is not None:
            value = await self.db.fetchval("SELECT value FROM credentials WHERE name = $1", name)
            if value is not None:
                return value
        return self.environ.get(name)

    async def resolve_many(self, names: list[str]) -> dict[str, str]:
        """The values of every name that resolves; names without a value are left out."""
        found: dict[str, str] = {}
        if self.db is not None and names:
            rows = await self.db.fetch(
                "SELECT name, value FROM credentials WHERE name = ANY($1::text[])", names
            )
            found = {r["name"]: r["value"] for r in rows}
        for name in names:
            if name not in found and name in self.environ:
                found[name] = self.environ[name]
        return found
