"""Which recorded session a new one may resume: one that ran, on this butler's runtime."""

from __future__ import annotations

from typing import Any

from butler.errors import SessionNotFound
from butler.runtimes.base import RuntimeAdapter
from butler.store.sessions import SessionStore


async def resumable(
    sessions: SessionStore, adapter: RuntimeAdapter, session_id: str | None
) -> dict[str, Any] | None:
    """The row of the session to resume (None for a fresh one); SessionNotFound if it cannot."""
    if session_id is None:
        return None
    row = await sessions.get(session_id)
    if row is None:
        raise SessionNotFound(f"session {session_id} not found; expected a recorded id")
    if not row.get("runtime_session_id"):
        raise SessionNotFound(
            f"session {session_id} has no runtime session to resume "
            f"(status {row['status']}); expected a session that ran"
        )
    if row["runtime"] != adapter.type_name or not adapter.supports_resume:
        raise SessionNotFound(
            f"session {session_id} ran on {row['runtime']}; this butler's runtime "
            f"{adapter.type_name} cannot resume it"
        )
    return row
