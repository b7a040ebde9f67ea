"""What a trigger returns."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from butler.runtimes.base import RuntimeResult
from butler.store.sessions import SessionOutcome

#: Why a session ended cancelled, for the caller and the row.
SHUTDOWN = "cancelled: the butler is shutting down"
CLIENT_GONE = "cancelled by its client"


@dataclass
class SpawnerResult:
    """The outcome of one trigger: the runtime's output and what it did.

    ``output`` holds any partial output when ``success`` is False.
    """

    output: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    success: bool = True
    error: str | None = None
    session_id: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None
    duration_ms: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rejected(error: str) -> SpawnerResult:
    """A trigger refused before any session started."""
    return SpawnerResult(success=False, error=error)


def queued(session_id: str) -> SpawnerResult:
    """A session asked for by a session while every slot is busy: queued, not waited for."""
    return SpawnerResult(
        success=False,
        error=(
            "queued: every session slot is busy (one of them is yours), so this call does not "
            f"wait for session {session_id}; it runs once a slot is free: "
            f"session_get('{session_id}') for its result"
        ),
        session_id=session_id,
    )


def outcome_of(
    status: str, error: str | None, result: RuntimeResult, started: float
) -> SessionOutcome:
    """The row's outcome of a run that ended with ``status`` after starting at ``started``."""
    usage = result.usage
    return SessionOutcome(
        status=status,
        success=status == "succeeded",
        output=result.output,
        error=error,
        tool_calls=[],  # the lifecycle fills them in, merged with the server's
        duration_ms=int((time.monotonic() - started) * 1000),
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cost_usd=result.cost_usd,
        runtime_session_id=result.runtime_session_id,
        model=result.model,
    )


def spawner_result(session_id: str, outcome: SessionOutcome) -> SpawnerResult:
    """What the caller of a trigger gets back for a recorded outcome."""
    return SpawnerResult(
        output=outcome.output,
        tool_calls=outcome.tool_calls,
        success=outcome.success,
        error=outcome.error,
        session_id=session_id,
        usage={
            "input_tokens": outcome.input_tokens or 0,
            "output_tokens": outcome.output_tokens or 0,
            "cache_read_tokens": outcome.cache_read_tokens or 0,
            "cache_write_tokens": outcome.cache_write_tokens or 0,
        },
        cost_usd=outcome.cost_usd,
        duration_ms=outcome.duration_ms,
    )
