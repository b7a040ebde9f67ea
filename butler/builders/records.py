"""Builders as their session rows describe them: the views tools, CLI and dashboard share."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from butler.builders.modes import MODES


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


def elapsed_ms(row: dict[str, Any]) -> int:
    """Milliseconds since the row's session started (or was created)."""
    since = row.get("started_at") or row.get("created_at")
    if not since:
        return 0
    started = datetime.fromisoformat(since)
    return max(0, int((datetime.now(UTC) - started).total_seconds() * 1000))
