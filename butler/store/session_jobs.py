"""Sessions handed to workers: PgQueuer's job table in the butler's schema, and the
results workers hand back (migration 016, docs/scaling.md).

A job holds what a worker needs to run the session's runtime and nothing it can
find itself (the butler's folder is on the worker too): the prompt, the limits,
and the session's token, which the daemon issued and revokes when the session
completes. The database already holds the credentials store and every row, so
the token lives nowhere new.

A worker's result goes to ``session_results`` and a NOTIFY wakes the daemon,
which completes the row through its own lifecycle. NOTIFY is best effort (a
listener reconnecting misses what was sent meanwhile), so the waiter also looks
at the table every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import uuid
from typing import Any

import asyncpg
from pgqueuer import AsyncpgDriver, Queries

from butler.store.db import Database, quote_ident

#: The one job kind of a butler's queue; its concurrency limit is the butler's own.
ENTRYPOINT = "session"
#: Where a worker says a result is in; the payload is "<schema>:<session id>".
RESULTS_CHANNEL = "butler_session_results"
#: How often a waiting daemon looks at the table when no NOTIFY came.
POLL_S = 2.0


@dataclasses.dataclass(frozen=True)
class SessionJob:
    """One session for a worker to run."""

    session_id: str
    prompt: str
    token: str
    max_turns: int | None = None
    timeout_s: float | None = None
    model: str | None = None
    resume: str | None = None
    parent_id: str | None = None

    def encode(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def decode(cls, payload: bytes) -> SessionJob:
        fields = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in json.loads(payload).items() if k in fields})


class SessionJobs:
    """Enqueue sessions for workers and collect what they hand back, for one butler."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._waiting: dict[str, asyncio.Event] = {}
        self._listener: asyncpg.Connection | None = None
        self._listening = asyncio.Lock()
        self._queue: asyncpg.Connection | None = None
        self._queueing = asyncio.Lock()

    async def enqueue(self, job: SessionJob) -> None:
        """Put the session in the queue; a worker with room picks it at once (NOTIFY)."""
        async with self._queueing:
            # A connection of its own: PgQueuer encodes its JSON itself, and the pool's
            # connections would encode it again.
            if self._queue is None or self._queue.is_closed():
                self._queue = await asyncpg.connect(
                    self.db.dsn,
                    timeout=10,
                    server_settings={"search_path": quote_ident(self.db.schema)},
                )
            await Queries(AsyncpgDriver(self._queue)).enqueue(ENTRYPOINT, job.encode())

    async def put_result(self, session_id: str, worker: str, result: dict[str, Any]) -> None:
        """A worker's result for the session (once: a second one is ignored), and the wake-up."""
        async with self.db.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO session_results (session_id, worker, result) VALUES ($1, $2, $3)"
                " ON CONFLICT (session_id) DO NOTHING",
                uuid.UUID(session_id),
                worker,
                result,
            )
            await conn.execute(
                "SELECT pg_notify($1, $2)", RESULTS_CHANNEL, f"{self.db.schema}:{session_id}"
            )

    async def result(self, session_id: str) -> tuple[str, dict[str, Any]] | None:
        """``(worker, result)`` once a worker handed the session's result back."""
        row = await self.db.fetchrow(
            "SELECT worker, result FROM session_results WHERE session_id = $1",
            uuid.UUID(session_id),
        )
        return (row["worker"], row["result"]) if row else None

    async def forget(self, session_id: str) -> None:
        """The row is complete: the handed-back result is no longer needed."""
        await self.db.execute(
            "DELETE FROM session_results WHERE session_id = $1", uuid.UUID(session_id)
        )

    async def wait_result(self, session_id: str) -> tuple[str, dict[str, Any]]:
        """Wait for a worker's result; the caller bounds the wait."""
        woken = self._waiting.setdefault(session_id, asyncio.Event())
        try:
            await self._listen()
            while True:
                found = await self.result(session_id)
                if found is not None:
                    return found
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), POLL_S)
                woken.clear()
        finally:
            self._waiting.pop(session_id, None)

    async def close(self) -> None:
        for conn in (self._listener, self._queue):
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
        self._listener = self._queue = None

    async def _listen(self) -> None:
        async with self._listening:
            if self._listener is not None and not self._listener.is_closed():
                return
            with contextlib.suppress(OSError, asyncpg.PostgresError, TimeoutError):
                self._listener = await asyncpg.connect(self.db.dsn, timeout=10)
                await self._listener.add_listener(RESULTS_CHANNEL, self._notified)

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        schema, _, session_id = payload.partition(":")
        if schema == self.db.schema and session_id in self._waiting:
            self._waiting[session_id].set()
