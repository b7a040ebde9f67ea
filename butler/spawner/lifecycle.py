"""The life of a session row: created, running, completed whatever happens.

Every feature that runs a runtime records it through one
:class:`SessionLifecycle`: the row is written before the runtime starts, the
tool-call ledger is opened with it (so the server can attribute calls), and
completion closes the ledger, merges what the server saw with what the
runtime reported, writes the outcome even when the caller is being
cancelled, and counts the session in the butler's metrics.

A session accepted and queued is work the butler promised: when its slot
comes while the database is away, it waits for the database (within its own
time limit) rather than failing at the first refused connection.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from opentelemetry.context import Context

from butler.config import ButlerConfig
from butler.errors import DatabaseError
from butler.paths import butler_dir
from butler.runtimes.base import RuntimeAdapter, ToolCall
from butler.security.session_tokens import SessionTokens
from butler.spawner.completions import CompletionWriter
from butler.spawner.ledger import ToolCallLedger, merge_tool_calls
from butler.spawner.session import Session
from butler.store.outages import UNREACHABLE, through_outage
from butler.store.sessions import NewSession, SessionOutcome, SessionStore
from butler.telemetry import SessionMetrics

log = logging.getLogger(__name__)


class SessionLifecycle:
    """Writes the session rows of one butler; nothing else creates or completes them."""

    def __init__(
        self,
        config: ButlerConfig,
        sessions: SessionStore,
        ledger: ToolCallLedger,
        runtime: str,
        queue_depth: Callable[[], int],
    ) -> None:
        self.config = config
        self.sessions = sessions
        self.ledger = ledger
        self.runtime = runtime
        self.metrics = SessionMetrics.create(queue_depth, config.name)
        self.completions = CompletionWriter(sessions, butler_dir(config) / "completions.jsonl")
        #: The capability tokens of running sessions: issued with the invocation, revoked here.
        self.tokens = SessionTokens()
        self._waiting_for_database: set[str] = set()

    @property
    def waiting_for_database(self) -> int:
        """Sessions holding a slot that wait for the database to come back before they run."""
        return len(self._waiting_for_database)

    def new(
        self, session: Session, trace_id: str | None = None, adapter: RuntimeAdapter | None = None
    ) -> NewSession:
        """The row of ``session``, not yet recorded: of this butler's runtime unless
        ``adapter`` is another's, on that runtime's model unless the session names one."""
        default = adapter.config.model if adapter else self.config.runtime.model
        return NewSession(
            prompt=session.prompt,
            trigger_source=session.source,
            runtime=adapter.type_name if adapter else self.runtime,
            model=session.model or default,
            type=session.type,
            parent_session_id=uuid.UUID(session.parent_id) if session.parent_id else None,
            trace_id=trace_id,
            metadata=dict(session.metadata),
            id=uuid.UUID(session.id),
            root_id=uuid.UUID(session.root_id) if session.root_id else None,
            chain_depth=session.depth,
        )

    async def create(
        self, new: NewSession, trace: Context | None = None, *, running: bool = False
    ) -> str:
        """Record the session as pending (``running``: as running, its slot already held,
        which saves the statement :meth:`running` would send) and attribute tool calls to
        it; return its id."""
        await self.sessions.create(new, "running" if running else "pending")
        self.ledger.open(str(new.id), trace)
        return str(new.id)

    async def running(self, session_id: str, outage_limit_s: float | None = None) -> None:
        """The runtime got its slot and starts (or was found running again).

        While the database is away this waits for it, at most ``outage_limit_s`` seconds
        (the session's time limit unless given), then raises :class:`DatabaseError`.
        """
        if not self.ledger.is_open(session_id):
            self.ledger.open(session_id)
        outage_limit_s = self.config.runtime.timeout_s if outage_limit_s is None else outage_limit_s

        def waiting(exc: BaseException) -> None:
            if session_id not in self._waiting_for_database:
                self._waiting_for_database.add(session_id)
                log.warning(
                    "database unreachable, the session waits for it to start: %s",
                    exc,
                    extra={"session_id": session_id, "outage_limit_s": outage_limit_s},
                )

        try:
            await through_outage(
                lambda: self.sessions.mark_running(uuid.UUID(session_id)), outage_limit_s, waiting
            )
        except UNREACHABLE as exc:
            raise DatabaseError(
                f"the database stayed unreachable for {outage_limit_s:g} s while this "
                f"session waited to start ({type(exc).__name__}: {exc}); it did "
                "not run: check that PostgreSQL is up, then trigger it again"
            ) from None
        finally:
            self._waiting_for_database.discard(session_id)

    async def annotate(self, session_id: str, metadata: dict[str, Any]) -> None:
        """Add keys to the session's metadata."""
        await self.sessions.update_metadata(uuid.UUID(session_id), metadata)

    async def complete(
        self,
        session_id: str,
        outcome: SessionOutcome,
        reported: Iterable[ToolCall] = (),
        runtime: str | None = None,
    ) -> SessionOutcome:
        """Write how the session ended, with every tool call it made; safe under cancellation.

        Returns once the outcome is journalled and written, or being retried in
        the background because the database is away: the caller never waits on it.
        ``runtime`` is the runtime that ran, when not the butler's own (its metrics' label).
        """
        self.tokens.revoke(session_id)  # its runtime can no longer call in as this session
        calls = merge_tool_calls(list(reported), self.ledger.close(session_id))
        outcome = replace(outcome, tool_calls=[call.to_json() for call in calls])
        await asyncio.shield(self.completions.write(session_id, outcome))
        self._measure(outcome, runtime or self.runtime)
        details = {"session_id": session_id, "status": outcome.status, "ms": outcome.duration_ms}
        if outcome.error:
            # The reason goes on the line itself: "failed" alone tells nobody what to do.
            extra = {**details, "error": outcome.error}
            log.warning("session %s: %s", outcome.status, outcome.error, extra=extra)
        else:
            log.info("session finished", extra=details)
        return outcome

    def _measure(self, outcome: SessionOutcome, runtime: str) -> None:
        labels = {"butler": self.config.name, "runtime": runtime}
        self.metrics.sessions.add(1, {**labels, "status": outcome.status})
        self.metrics.duration.record(outcome.duration_ms, labels)
        for kind in ("input", "output", "cache_read", "cache_write"):
            count = getattr(outcome, f"{kind}_tokens") or 0
            if count:
                self.metrics.tokens.add(count, {**labels, "kind": kind})
