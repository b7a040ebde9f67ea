"""Where a session stands in its chain: its root trigger, its depth, the chain's size."""

from __future__ import annotations

import uuid

from butler.store.db import Database


async def chain_of(db: Database, session_id: uuid.UUID) -> tuple[uuid.UUID, int] | None:
    """The root of ``session_id``'s chain (itself when no session started it) and its depth."""
    row = await db.fetchrow(
        "SELECT COALESCE(root_id, id) AS root, chain_depth FROM sessions WHERE id = $1",
        session_id,
    )
    return (row["root"], row["chain_depth"]) if row else None


async def chain_size(db: Database, root_id: uuid.UUID) -> int:
    """How many sessions descend from the root ``root_id`` (the root not counted)."""
    return await db.fetchval("SELECT count(*) FROM sessions WHERE root_id = $1", root_id)
