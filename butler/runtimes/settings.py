"""``[butler.runtime]``: which agent CLI runs a butler's sessions, and its limits.

Held here rather than in :mod:`butler.config` so the runtimes import nothing
above them; the butler's config reads this table with this model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RuntimeConfig(BaseModel):
    """``[butler.runtime]``: which agent CLI runs sessions, and its limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = "claude-code"
    model: str | None = None
    max_concurrent_sessions: int = Field(default=1, ge=1, le=64)
    max_queued_sessions: int = Field(default=100, ge=0, le=10_000)
    #: How far sessions may start sessions: a root trigger is depth 0 (spawner/chains.py).
    max_chain_depth: int = Field(default=3, ge=0, le=100)
    #: How many sessions may descend from one root trigger, all depths together.
    max_chain_sessions: int = Field(default=20, ge=0, le=10_000)
    max_turns: int = Field(default=20, ge=1, le=1000)
    timeout_s: float = Field(default=600.0, gt=0, allow_inf_nan=False)
    args: list[str] = Field(default_factory=list)
    cli_path: str | None = None
    transport: Literal["http", "sse"] = "http"
    command: list[str] = Field(default_factory=list)
    interactive_command: list[str] = Field(default_factory=list)
    #: Where sessions run: "local" (in the daemon), "remote" (by `butler worker`
    #: processes, through the job queue), or "any": in the daemon while fewer than
    #: ``local_sessions`` run there, else wherever room comes first, a live worker
    #: or a local slot (docs/scaling.md).
    workers: Literal["local", "any", "remote"] = "local"
    #: With workers = "any": how many sessions the daemon runs itself before it hands
    #: the next to a worker.
    local_sessions: int = Field(default=1, ge=1, le=64)
    #: The tools a session may call; None is every tool the butler serves.
    tools: list[str] | None = None
