"""The ``state`` table: the butler's JSON key-value store."""

from __future__ import annotations

from typing import Any

from butler.errors import UserError
from butler.store.db import Database
from butler.store.text import abbreviate, clean_text, json_problem

#: Longest state key, in characters (the primary key index holds at most ~2.7 kB).
MAX_KEY_CHARS = 512
#: Deepest nesting of a state value.
MAX_VALUE_DEPTH = 32
#: Largest state value, in bytes of JSON.
MAX_VALUE_BYTES = 1024 * 1024


def key_problem(key: str) -> str | None:
    """Why ``key`` is no state key (empty, too long, NUL or invalid UTF-8), or None."""
    if not key:
        return "is empty"
    if len(key) > MAX_KEY_CHARS:
        return f"is {len(key)} characters long"
    if clean_text(key)[1]:
        return "holds a NUL character or invalid UTF-8"
    return None


def check_key(key: str) -> str:
    """``key`` if it can be stored; else a :class:`UserError` in one line."""
    problem = key_problem(key)
    if problem:
        raise UserError(
            f"key {abbreviate(key)} {problem}; expected 1 to {MAX_KEY_CHARS} characters, no NUL"
        )
    return key


def value_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a state value, or None."""
    return json_problem(value, MAX_VALUE_DEPTH, MAX_VALUE_BYTES)


def check_value(value: Any) -> Any:
    """``value`` if it can be stored; else a :class:`UserError` in one line."""
    problem = value_problem(value)
    if problem:
        raise UserError(
            f"value {abbreviate(value)} {problem}; expected JSON at most {MAX_VALUE_DEPTH} "
            f"levels deep and {MAX_VALUE_BYTES} bytes, without NUL, NaN or Infinity"
        )
    return value


class VersionConflict(UserError):
    """``if_version`` did not match the key's version: someone wrote it first."""

    def __init__(self, key: str, expected: int, current: int) -> None:
        now = f"is at version {current}" if current else "does not exist (version 0)"
        super().__init__(
            f"key {abbreviate(key)} {now}, not {expected} (if_version); expected the version "
            "state_get(with_version=true) last returned: read it again and retry"
        )
        self.current = current


class StateStore:
    """Get, set, list and delete JSON values by key.

    Keys and values are checked on the way in (:func:`check_key`,
    :func:`check_value`): a state value is data a runtime will read back, so
    it is refused rather than silently altered.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, key: str) -> Any | None:
        if key_problem(key):
            return None
        return await self.db.fetchval("SELECT value FROM state WHERE key = $1", key)

    async def get_versioned(self, key: str) -> tuple[Any | None, int]:
        """The value under ``key`` and its version; ``(None, 0)`` when there is none."""
        if key_problem(key):
            return None, 0
        row = await self.db.fetchrow("SELECT value, version FROM state WHERE key = $1", key)
        return (row["value"], row["version"]) if row else (None, 0)

    async def set(self, key: str, value: Any, if_version: int | None = None) -> int:
        """Store ``value``; return the key's new version.

        With ``if_version``, store only while the key is at that version (0: only
        while it does not exist), else raise :class:`VersionConflict`: a
        read-modify-write that lost a race retries instead of losing a write.
        """
        check_key(key)
        check_value(value)
        if if_version is None:
            query = (
                "INSERT INTO state (key, value, updated_at) VALUES ($1, $2, now())"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value,"
                " version = state.version + 1, updated_at = now() RETURNING version"
            )
            return await self.db.fetchval(query, key, value)
        if if_version == 0:
            query = (
                "INSERT INTO state (key, value, updated_at) VALUES ($1, $2, now())"
                " ON CONFLICT (key) DO NOTHING RETURNING version"
            )
            version = await self.db.fetchval(query, key, value)
        else:
            query = (
                "UPDATE state SET value = $2, version = version + 1, updated_at = now()"
                " WHERE key = $1 AND version = $3 RETURNING version"
            )
            version = await self.db.fetchval(query, key, value, if_version)
        if version is None:
            raise VersionConflict(key, if_version, (await self.get_versioned(key))[1])
        return version

    async def list(self, prefix: str = "") -> dict[str, Any]:
        prefix = clean_text(prefix)[0]
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = await self.db.fetch(
            "SELECT key, value FROM state WHERE key LIKE $1 ORDER BY key", escaped + "%"
        )
        return {r["key"]: r["value"] for r in rows}

    async def page(self, prefix: str, after: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` entries under ``prefix`` whose key sorts after ``after``, by key."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = await self.db.fetch(
            "SELECT key, value, version, updated_at FROM state WHERE key LIKE $1 AND key > $2"
            " ORDER BY key LIMIT $3",
            escaped + "%",
            after,
            limit,
        )
        return [dict(r) for r in rows]

    async def delete(self, key: str) -> bool:
        if key_problem(key):
            return False
        result = await self.db.execute("DELETE FROM state WHERE key = $1", key)
        return result.endswith(" 1")
