"""Session completions that survive the database going away.

A completion is the one write that says how a session ended. It is put in a
small journal in the butler's data folder first (one JSON line per pending
completion, readable by the owner only), then written to the database. When
the database is away, the write is retried with backoff in the background
while the daemon lives, and the caller gets its result meanwhile; a daemon
that stops first replays the journal when it starts again, so the row ends
with what really happened rather than "the daemon stopped".
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import threading
import uuid
from pathlib import Path
from typing import Any

import asyncpg

from butler.errors import DatabaseError
from butler.security.private_files import replace_private, write_private
from butler.store.sessions import SessionOutcome, SessionStore

log = logging.getLogger(__name__)

#: Errors that mean "the database is not reachable right now", worth retrying.
TRANSIENT = (
    OSError,
    TimeoutError,
    DatabaseError,
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.OperatorInterventionError,
)
FIRST_BACKOFF_S = 0.2
MAX_BACKOFF_S = 10.0


class Journal:
    """Pending completions, one JSON line each, in a file only the owner can read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def add(self, session_id: str, outcome: SessionOutcome) -> None:
        line = json.dumps({"session_id": session_id, "outcome": dataclasses.asdict(outcome)})
        with self._lock:
            write_private(self.path, line + "\n", how="append")

    def remove(self, session_id: str) -> None:
        with self._lock:
            kept = [e for e in self._read() if e["session_id"] != session_id]
            if not kept:
                self.path.unlink(missing_ok=True)
                return
            replace_private(self.path, "".join(json.dumps(e) + "\n" for e in kept))

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return self._read()

    def _read(self) -> list[dict[str, Any]]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        entries = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except ValueError:
                log.warning("skipping a torn line in %s", self.path)
        return entries


class CompletionWriter:
    """Writes completions through the journal, retrying while the database is away."""

    def __init__(self, sessions: SessionStore, journal_path: Path) -> None:
        self.sessions = sessions
        self.journal = Journal(journal_path)
        self._retrying: dict[str, asyncio.Task[None]] = {}

    @property
    def pending(self) -> int:
        return len(self._retrying)

    async def write(self, session_id: str, outcome: SessionOutcome) -> bool:
        """Record the completion; True when it landed now, False when it is being retried."""
        await asyncio.to_thread(self.journal.add, session_id, outcome)
        if await self._attempt(session_id, outcome):
            return True
        task = asyncio.create_task(self._retry(session_id, outcome))
        self._retrying[session_id] = task
        task.add_done_callback(lambda _: self._retrying.pop(session_id, None))
        return False

    async def replay(self) -> int:
        """Write every completion a stopped daemon left in the journal; return how many."""
        written = 0
        for entry in await asyncio.to_thread(self.journal.entries):
            outcome = SessionOutcome(**entry["outcome"])
            if await self._attempt(entry["session_id"], outcome):
                written += 1
        return written

    async def flush(self, timeout: float) -> int:
        """Give pending completions ``timeout`` seconds to land; return how many did not."""
        tasks = set(self._retrying.values())
        if not tasks:
            return 0
        _, still = await asyncio.wait(tasks, timeout=timeout)
        for task in still:
            task.cancel()  # its journal line stays for the next start to replay
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*still, return_exceptions=True)
        return len(still)

    async def _retry(self, session_id: str, outcome: SessionOutcome) -> None:
        delay = FIRST_BACKOFF_S
        while not await self._attempt(session_id, outcome):
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)
        log.info("session completion written after a retry", extra={"session_id": session_id})

    async def _attempt(self, session_id: str, outcome: SessionOutcome) -> bool:
        try:
            await self.sessions.complete(uuid.UUID(session_id), outcome)
        except TRANSIENT as exc:
            log.warning(
                "session completion not written yet, will retry: %s",
                exc,
                extra={"session_id": session_id},
            )
            return False
        except asyncpg.PostgresError as exc:
            # the database refuses this record itself: retrying cannot help
            log.error(
                "session completion refused by the database: %s",
                exc,
                extra={"session_id": session_id},
            )
        await asyncio.to_thread(self.journal.remove, session_id)
        return True
