"""What a trigger returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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
