"""Builders as their session rows describe them: the views tools, CLI and dashboard share."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from butler.builders.modes import MODES
from butler.paths import Install, butler_dir
from butler.store.sessions import SessionStore


def is_builder(row: dict[str, Any]) -> bool:
    """A session row that records a builder (a headless one included)."""
    return row.get("type") in MODES and "builder_id" in (row.get("metadata") or {})


def is_live(row: dict[str, Any]) -> bool:
    """A builder whose interactive runtime has not been seen to end."""
    meta = row.get("metadata") or {}
    return not meta.get("headless") and not meta.get("ended_at") and row["status"] != "pending"


def summary(row: dict[str, Any]) -> str:
    """One line saying what a builder was asked to do."""
    meta = row.get("metadata") or {}
    if row["type"] == "task":
        return str(meta.get("task") or row.get("prompt") or "").splitlines()[0][:120]
    if row["type"] == "protocol":
        return f"protocol {meta.get('protocol')}"
    if row["type"] == "spec":
        return str(meta.get("spec") or "")
    return "interactive shell" + (f" ({meta['role']})" if meta.get("role") else "")


def builder_view(row: dict[str, Any]) -> dict[str, Any]:
    """The public shape of one builder."""
    meta = row.get("metadata") or {}
    return {
        "id": meta.get("builder_id"),
        "type": row["type"],
        "status": row["status"],
        "runtime": row.get("runtime"),
        "summary": summary(row),
        "session_id": row["id"],
        "branch": meta.get("branch"),
        "worktree": meta.get("worktree"),
        "repo": meta.get("repo"),
        "tmux_session": meta.get("tmux_session"),
        "tmux_socket": meta.get("tmux_socket"),
        "headless": bool(meta.get("headless")),
        "created_at": row.get("created_at"),
        "error": row.get("error"),
        "pruned": bool(meta.get("pruned_at")),
        "prune": meta.get("prune"),
    }


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


async def builder_rows(sessions: SessionStore) -> list[dict[str, Any]]:
    """Every builder's session row, newest first."""
    return [row for row in await sessions.of_types(MODES) if is_builder(row)]


async def mark(sessions: SessionStore, row: dict[str, Any], marks: dict[str, Any]) -> None:
    """Add the builders' own keys (``stop_requested_at``, ``pruned_at``...) to a row."""
    await sessions.update_metadata(uuid.UUID(str(row["id"])), marks)


def builder_folder(butler: Install, builder_id: str) -> Path:
    """A builder's private folder: its session's launch spec, exit record, restart notes."""
    return butler_dir(butler) / "builders" / builder_id
