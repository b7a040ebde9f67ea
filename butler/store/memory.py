"""Episodic memory: recent sessions' outcomes, fed back into later system prompts."""

from __future__ import annotations

import uuid
from typing import Protocol

from butler.store.db import Database
from butler.store.text import clean_text

#: Longest episode kept, in characters; memory is a reminder, not a transcript.
EPISODE_LIMIT = 2000


class Memory(Protocol):
    """What the spawner needs of a memory module."""

    async def fetch_memory_context(self) -> str | None: ...

    async def store_session_episode(
        self, session_id: uuid.UUID, prompt: str, output: str
    ) -> None: ...


class PostgresMemory:
    """Memory kept in the butler's ``memory_episodes`` table."""

    def __init__(self, db: Database, max_episodes: int = 5) -> None:
        self.db = db
        self.max_episodes = max_episodes

    async def fetch_memory_context(self) -> str | None:
        rows = await self.db.fetch(
            "SELECT content, created_at FROM memory_episodes ORDER BY created_at DESC, id DESC"
            " LIMIT $1",
            self.max_episodes,
        )
        if not rows:
            return None
        lines = ["# Memory: recent sessions (newest first)", ""]
        for row in rows:
            lines.append(f"- {row['created_at']:%Y-%m-%d %H:%M} {row['content']}")
        return "\n".join(lines)

    async def store_session_episode(self, session_id: uuid.UUID, prompt: str, output: str) -> None:
        content = f"Asked: {prompt.strip()[:300]} | Answered: {output.strip()}"
        await self.db.execute(
            "INSERT INTO memory_episodes (session_id, content) VALUES ($1, $2)",
            session_id,
            clean_text(content[:EPISODE_LIMIT])[0],
        )
