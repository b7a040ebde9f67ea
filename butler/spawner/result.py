"""What a trigger returns, and how a headless session's run ended, for its row."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from butler.config import ButlerConfig
from butler.errors import ButlerError
from butler.runtimes.base import RuntimeFailure, RuntimeResult
from butler.spawner.preflight import explain
from butler.store.sessions import SessionOutcome

log = logging.getLogger(__name__)

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


@dataclass
class Ending:
    """How one headless session's run ended: what :meth:`caught` made of it.

    One mapping for every session the daemon records, whether its runtime ran here
    or on a worker, and whether this daemon started it or took it over from one
    killed before (handed_over.py): the same failure reads the same on its row. A
    worker hands its run's ending back as JSON (:meth:`to_json`, :meth:`from_json`).
    """

    status: str = "failed"
    error: str | None = None
    #: The runtime's result, or what it produced before it failed.
    result: RuntimeResult = field(default_factory=RuntimeResult)
    #: When the run's time began (monotonic: this process's own, never sent as JSON).
    started: float = field(default_factory=time.monotonic, compare=False)

    @contextlib.contextmanager
    def caught(self, config: ButlerConfig, session_id: str) -> Iterator[Ending]:
        """Run the session's steps; whatever ends them is recorded here, and only a
        cancellation goes on (its caller's: a drain, a client gone)."""
        try:
            yield self
            self.status = "succeeded"
        except RuntimeFailure as exc:
            self.result, self.error = exc.partial, explain(config, str(exc))
        except asyncio.CancelledError as exc:
            # whoever cancelled says why; a bare cancel is the drain's
            reason = exc.args[0] if exc.args and isinstance(exc.args[0], str) else SHUTDOWN
            self.status, self.error = "cancelled", reason
            raise
        except ButlerError as exc:  # a refusal that names its cause: no traceback
            self.error = str(exc)
        except Exception as exc:
            log.exception("session %s crashed", session_id)
            self.error = f"internal error: {type(exc).__name__}: {exc}"

    def to_json(self) -> dict[str, Any]:
        """The ending as JSON: what a worker hands back to the daemon."""
        return {"status": self.status, "error": self.error, "result": self.result.to_json()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Ending:
        """The ending :meth:`to_json` gave, from a worker (not trusted): a status other
        than ``succeeded`` is a failure, a field of the wrong type is left out."""
        result, error = data.get("result"), data.get("error")
        return cls(
            status="succeeded" if data.get("status") == "succeeded" else "failed",
            error=error if isinstance(error, str) else None,
            result=RuntimeResult.from_json(result if isinstance(result, dict) else {}),
        )

    def outcome(self) -> SessionOutcome:
        """The row's outcome: the run's time counted from :attr:`started`."""
        usage = self.result.usage
        return SessionOutcome(
            status=self.status,
            success=self.status == "succeeded",
            output=self.result.output,
            error=self.error,
            tool_calls=[],  # the lifecycle fills them in, merged with the server's
            duration_ms=int((time.monotonic() - self.started) * 1000),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=self.result.cost_usd,
            runtime_session_id=self.result.runtime_session_id,
            model=self.result.model,
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
