"""Session completions that survive the database going away.

A completion is the one write that says how a session ended. It is written
to the database; when the database is away, it is put in a small journal in
the butler's data folder (one JSON line per pending completion, readable by
the owner only) and the write is retried with backoff in the background
while the daemon lives, the caller getting its result meanwhile; a daemon
that stops first replays the journal when it starts again, so the row ends
with what really happened rather than "the daemon stopped". A completion
the database takes at once is never journalled: most are, and the journal
line was a file written and removed again for every session. A daemon
killed outright during that first write leaves the row running, which its
next start marks failed, as it does a session killed a moment earlier.

The journal is a safeguard, never a gate: when the data folder is full (or
unwritable), the completion is still retried, and the caller still gets the
runtime's result. Only a completion that neither the journal nor the
database took can be lost, and only if the daemon stops before the database
comes back; that is said in one line.
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

from butler.security.private_files import replace_private, write_private
from butler.store.outages import FIRST_BACKOFF_S, MAX_BACKOFF_S, UNREACHABLE
from butler.store.sessions import SessionOutcome, SessionStore

log = logging.getLogger(__name__)


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
            entries = self._read()
            kept = [e for e in entries if e["session_id"] != session_id]
            if len(kept) == len(entries):
                return  # never journalled (the data folder was full): nothing to rewrite
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
        #: Sessions whose completion is only in memory: the journal could not take it.
        self._unjournalled: set[str] = set()

    @property
    def pending(self) -> int:
        return len(self._retrying)

    async def write(self, session_id: str, outcome: SessionOutcome) -> bool:
        """Record the completion; True when it landed now, False when it is being retried
        (journalled first, so that a daemon stopping before the database is back replays it)."""
        if await self._attempt(session_id, outcome, journalled=False):
            return True
        try:
            await asyncio.to_thread(self.journal.add, session_id, outcome)
        except OSError as exc:
            # A full or broken data folder must not keep the outcome from the retries.
            log.warning(
                "session completion not journalled (%s): it is retried while the daemon "
                "runs, but lost if it stops first; free space in %s so the next ones are "
                "kept through an outage",
                exc,
                self.journal.path.parent,
                extra={"session_id": session_id},
            )
            self._unjournalled.add(session_id)
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
        given_up = {sid for sid, task in self._retrying.items() if task in still}
        for task in still:
            task.cancel()  # its journal line stays for the next start to replay
        for session_id in given_up & self._unjournalled:
            log.error(
                "session completion lost: neither the data folder nor the database took it; "
                "the next start marks the session failed",
                extra={"session_id": session_id},
            )
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*still, return_exceptions=True)
        return len(still)

    async def _retry(self, session_id: str, outcome: SessionOutcome) -> None:
        delay = FIRST_BACKOFF_S
        while not await self._attempt(session_id, outcome):
            await asyncio.sleep(delay)
            delay = min(delay * 2, MAX_BACKOFF_S)
        self._unjournalled.discard(session_id)
        log.info("session completion written after a retry", extra={"session_id": session_id})

    async def _attempt(
        self, session_id: str, outcome: SessionOutcome, journalled: bool = True
    ) -> bool:
        """Write the completion; True once the database has taken or refused it (its
        journal line, if ``journalled``, then removed), False while it is away."""
        try:
            await self.sessions.complete(uuid.UUID(session_id), outcome)
        except UNREACHABLE as exc:
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
            # Nor would the next start: a worker's result left for this session would
            # be taken over and refused again at every start. Without it, that start
            # fails the row as it fails any other left open.
            with contextlib.suppress(*UNREACHABLE, asyncpg.PostgresError):
                await self.sessions.drop_handed_result(uuid.UUID(session_id))
        if not journalled:
            return True
        try:
            await asyncio.to_thread(self.journal.remove, session_id)
        except OSError as exc:
            # The row is written; a line left behind is written again, identically, at the next
            # start, which costs nothing but the rewrite.
            log.warning(
                "session completion written, but its journal line stays (%s)",
                exc,
                extra={"session_id": session_id},
            )
        return True
