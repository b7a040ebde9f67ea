"""Sessions handed to workers: PgQueuer's job table in the butler's schema, and the
results workers hand back (migration 016, docs/scaling.md).

A job's payload is the spawner's to write and read (``butler.spawner.remote.Job``:
the session as it was admitted, and no credential); here it is bytes. The worker
that claims a session mints two secrets and writes only their digests on the
row with its claim: the token its runtime calls the butler with
(:meth:`claimed_session`), and the key its result is handed back with.

A worker's result goes to ``session_results`` and a NOTIFY wakes the daemon,
which completes the row through its own lifecycle. A result counts only with
the key of the pickup that holds the session's claim: the database refuses any
other (``worker_result``, migration 020), and the daemon checks again
(:meth:`result`): one written by anyone else who can write the table (the
daemon's own role) is refused in one logged line, and the row is dropped. A
worker's own role reaches the session's row only through the functions of
migration 020 (docs/security.md). NOTIFY is best effort (a
listener reconnecting misses what was sent meanwhile), so the waiter also looks
at the table every few seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

from butler.store.db import Database, quote_ident
from butler.store.outages import UNREACHABLE
from butler.store.sessions import SessionStore

log = logging.getLogger(__name__)

#: The hand-over's version: what a job carries and how a claim, a session's token and a
#: result are made. Daemon and worker must speak the same (docs/scaling.md): 2 is the
#: job without a token, its token and result key minted at the claim.
PROTOCOL = 2
#: The one job kind of a butler's queue, named for the protocol, so that a worker of
#: another protocol never picks a job it would run wrongly; its concurrency limit is
#: the butler's own.
ENTRYPOINT = f"session-v{PROTOCOL}"
#: Where a worker says a result is in; the payload is "<schema>:<session id>".
RESULTS_CHANNEL = "butler_session_results"
#: How often a waiting daemon looks at the table when no NOTIFY came.
POLL_S = 2.0


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Pickup:
    """One worker's claim on one session: an id for retries, and its two secrets (only
    their digests reach the database)."""

    id: str
    #: What the session's runtime calls its butler with; revoked when the row closes.
    token: str
    #: What the result is handed back with: only this pickup's result counts.
    key: str

    def claim(self) -> dict[str, str]:
        """What the claim writes on the session's row (readable by anyone who reads it)."""
        return {
            "pickup": self.id,
            "token_digest": _digest(self.token),
            "key_digest": _digest(self.key),
        }


class SessionJobs:
    """Enqueue sessions for workers and collect what they hand back, for one butler."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._waiting: dict[str, asyncio.Event] = {}
        self._listener: asyncpg.Connection | None = None
        self._listening = asyncio.Lock()
        self._queue: asyncpg.Connection | None = None
        self._queueing = asyncio.Lock()

    async def enqueue(self, payload: bytes) -> int:
        """Put a session's job in the queue; a worker with room picks it at once (NOTIFY).

        Returns the job's id in PgQueuer's table."""
        async with self._queueing:
            # A connection of its own: PgQueuer encodes its JSON itself, and the pool's
            # connections would encode it again.
            if self._queue is None or self._queue.is_closed():
                self._queue = await asyncpg.connect(
                    self.db.dsn,
                    timeout=10,
                    server_settings={"search_path": quote_ident(self.db.schema)},
                )
            # Imported here: PgQueuer is ~0.2 s of a daemon's start, and only a butler
            # whose sessions run on workers enqueues (benchmarks/startup.py).
            from pgqueuer import AsyncpgDriver, Queries

            ids = await Queries(AsyncpgDriver(self._queue)).enqueue(ENTRYPOINT, payload)
        return int(ids[0])

    async def withdraw(self, job_id: int) -> bool:
        """Take back a job no worker picked yet (its session was cancelled); logged as
        canceled, as PgQueuer logs its own. False when a worker already has it."""
        gone = await self.db.fetchval(
            "WITH gone AS (DELETE FROM pgqueuer WHERE id = $1 AND status = 'queued'"
            " RETURNING id, entrypoint, priority)"
            " INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority)"
            " SELECT id, 'canceled', entrypoint, priority FROM gone RETURNING job_id",
            job_id,
        )
        return gone is not None

    async def claim(self, session_id: str, worker: str, pickup: Pickup) -> str | None:
        """Mark the session as picked by ``worker`` in ``pickup``; None when it is the
        first, or when the claim there is this very pickup's (made by an earlier try whose
        reply an outage lost); else the worker that picked it before (and stopped: its
        job came round again), whose claim ``pickup`` then takes over (to hand back that
        the session stopped, with its own key).

        A worker's, through ``worker_claim`` (migration 020): its role may not touch the
        row itself, and the function claims only a session a picked job names."""
        claim = pickup.claim()
        return await self.db.fetchval(
            "SELECT worker_claim($1, $2, $3, $4, $5)",
            uuid.UUID(session_id),
            worker,
            claim["pickup"],
            claim["token_digest"],
            claim["key_digest"],
        )

    async def claimed_session(self, token_digest: str) -> str | None:
        """The open session whose worker minted a token of ``token_digest`` at pickup."""
        found = await self.db.fetchval(
            "SELECT id FROM sessions WHERE status IN ('pending', 'running')"
            " AND metadata->>'token_digest' = $1",
            token_digest,
        )
        return str(found) if found is not None else None

    async def open(self, session_id: str) -> bool:
        """Whether the session's row is still open: a result for it is still awaited
        (``worker_session_open``: a worker's role reads nothing else of the row)."""
        return bool(await self.db.fetchval("SELECT worker_session_open($1)", uuid.UUID(session_id)))

    async def put_result(
        self, session_id: str, worker: str, result: dict[str, Any], key: str
    ) -> None:
        """A worker's result for the session, handed back with its pickup's ``key`` (once:
        a second one with that key is ignored; one with another key, a forgery, is
        replaced), and the wake-up. ``worker_result`` (migration 020) takes it only with
        the key of the claim the row holds: one refused there (this worker's claim was
        taken over meanwhile) is dropped in one logged line, nobody awaiting it."""
        async with self.db.pool.acquire() as conn, conn.transaction():
            try:
                await conn.execute(
                    "SELECT worker_result($1, $2, $3, $4)",
                    uuid.UUID(session_id),
                    worker,
                    result,
                    key,
                )
            except asyncpg.InsufficientPrivilegeError as exc:
                log.warning(
                    "the session's result was refused: %s; dropped",
                    exc,
                    extra={"session_id": session_id},
                )
                return
            await conn.execute(
                "SELECT pg_notify($1, $2)", RESULTS_CHANNEL, f"{self.db.schema}:{session_id}"
            )

    async def result(self, session_id: str) -> tuple[str, dict[str, Any]] | None:
        """``(worker, result)`` once the worker that holds the session's claim handed its
        result back. Any other result is refused in one logged line and dropped."""
        row = await self.db.fetchrow(
            "SELECT r.worker, r.result, s.metadata->>'worker' AS holder,"
            " s.metadata->>'key_digest' AS key_digest"
            " FROM session_results r LEFT JOIN sessions s ON s.id = r.session_id"
            " WHERE r.session_id = $1",
            uuid.UUID(session_id),
        )
        if row is None:
            return None
        result = dict(row["result"]) if isinstance(row["result"], dict) else {}
        key = result.pop("key", None)
        if (
            isinstance(key, str)
            and row["key_digest"] is not None
            and hmac.compare_digest(_digest(key), row["key_digest"])
        ):
            return row["worker"], result
        log.warning(
            "refused a result handed back as %r: it is not from the worker that holds the "
            "session's claim (%s); dropped",
            row["worker"],
            row["holder"] or "no worker claimed it",
            extra={"session_id": session_id},
        )
        await self.db.execute(
            "DELETE FROM session_results WHERE session_id = $1 AND result = $2::jsonb",
            uuid.UUID(session_id),
            row["result"],
        )
        return None

    async def in_queue(self) -> dict[int, bytes]:
        """The jobs still in the queue, waiting or picked by a worker: each one's payload
        by its id."""
        rows = await self.db.fetch(
            "SELECT id, payload FROM pgqueuer WHERE entrypoint = $1"
            " AND status IN ('queued', 'picked') ORDER BY id",
            ENTRYPOINT,
        )
        return {int(row["id"]): bytes(row["payload"] or b"") for row in rows}

    async def handed_back(self) -> set[str]:
        """The sessions whose result a worker handed back and no daemon recorded yet."""
        rows = await self.db.fetch("SELECT session_id FROM session_results")
        return {str(row["session_id"]) for row in rows}

    async def forget_closed(self) -> int:
        """Drop the results of rows already closed (a session whose wait ended before its
        worker reported): nobody would ever record them. How many."""
        done = await self.db.execute(
            "DELETE FROM session_results r USING sessions s WHERE s.id = r.session_id"
            " AND s.status NOT IN ('pending', 'running')"
        )
        return int(done.split()[-1])

    async def wait_result(self, session_id: str) -> tuple[str, dict[str, Any]]:
        """Wait for a worker's result; the caller bounds the wait."""
        woken = self._waiting.setdefault(session_id, asyncio.Event())
        try:
            await self._listen()
            while True:
                try:
                    found = await self.result(session_id)
                except UNREACHABLE:
                    # The database is away: the worker keeps the result until it is back
                    # (and the caller's bound still holds).
                    found = None
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


class WorkerSessionRows(SessionStore):
    """The session rows as a worker on its own database role reaches them: the one thing
    its runtime's run writes there, what the jail saw (``metadata.sandbox``), goes
    through ``worker_note_sandbox`` (migration 020); the role writes nothing else."""

    async def update_metadata(self, session_id: uuid.UUID, metadata: dict[str, Any]) -> None:
        cleaned = self._row_text().json("metadata", metadata)
        sandbox = cleaned.get("sandbox") if isinstance(cleaned, dict) else None
        if sandbox is not None:
            await self.db.execute("SELECT worker_note_sandbox($1, $2)", session_id, sandbox)
