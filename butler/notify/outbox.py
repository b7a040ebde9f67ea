"""Sending recorded deliveries: one attempt at a time per row, retries, quiet hours.

Every delivery is a row first (:mod:`butler.store.deliveries`); this module
makes its attempts. One loop wakes when the earliest waiting row is due (or
when a new one is recorded), claims what is due and attempts each in a task
of its own. A failed attempt is tried again after ``retry_after_s``, four
times longer each time, ``retries`` times; a message that is not urgent
waits for quiet hours to end, and the messages held for one channel go out
then as one digest (each merged one keeps its row, status ``merged``).
Nothing here can fail the session the message came from: every outcome is
recorded on the row and logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any

from butler.clock import Clock
from butler.config.notify import NotifyConfig
from butler.notify.channels import ChannelUnavailable, fill
from butler.notify.message import Attachment, Message
from butler.notify.quiet import QuietHours
from butler.notify.send import Outcome
from butler.store.credentials import CredentialStore
from butler.store.deliveries import DeliveryStore

log = logging.getLogger(__name__)

Sender = Callable[[list[str], Message], Awaitable[Outcome]]
#: How long the loop waits before looking again after the database failed it.
RETRY_LOOP_AFTER = timedelta(seconds=30)
#: Longest the loop sleeps with nothing due (a poke wakes it sooner).
IDLE = timedelta(hours=1)


class Outbox:
    """Attempts one butler's recorded deliveries when they are due."""

    def __init__(
        self,
        config: NotifyConfig,
        store: DeliveryStore,
        credentials: CredentialStore,
        clock: Clock,
        sender: Sender,
    ) -> None:
        self.config = config
        self.store = store
        self.credentials = credentials
        self.clock = clock
        self.sender = sender
        self.quiet = QuietHours.parse(config.quiet, config.timezone)
        self._poked = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._attempts: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        """Send on what an earlier daemon left, and keep sending until :meth:`stop`."""
        resent = await self.store.resend_interrupted(self.clock.now())
        if resent:
            log.info("deliveries interrupted by a stop are sent again", extra={"count": resent})
        self.ensure_running()

    def ensure_running(self) -> None:
        if self._loop is None or self._loop.done():
            self._loop = asyncio.create_task(self._run(), name="butler-outbox")

    def poke(self) -> None:
        """A row became due: look now rather than at the next planned wake."""
        self._poked.set()

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop the loop; attempts under way get ``grace_s`` to finish, then are cancelled.

        A cancelled attempt's row stays ``sending`` and is sent again at the next start.
        """
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loop
        if self._attempts:
            _, still = await asyncio.wait(set(self._attempts), timeout=grace_s)
            for task in still:
                task.cancel()
            if still:
                await asyncio.wait(still)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``work`` as an attempt :meth:`stop` waits for."""
        task = asyncio.create_task(work)
        self._attempts.add(task)
        task.add_done_callback(self._attempts.discard)
        return task

    def held_until(self, priority: str, now: datetime) -> datetime | None:
        """When quiet hours holding a message of ``priority`` end, if they hold it now."""
        if self.quiet is None or priority == "high":
            return None
        return self.quiet.until(now)

    async def attempt(self, row: dict[str, Any]) -> dict[str, Any]:
        """One attempt on a claimed row; its report (status, error, until)."""
        now = self.clock.now()
        until = self.held_until(row["priority"], now)
        if until is not None:
            await self.store.hold(row["id"], until)
            self.poke()
            return {"channel": row["channel"], "status": "held", "until": until.isoformat()}
        outcome, final = await self._send(row)
        done = len(row["attempts"]) + 1
        status, next_at = "delivered", None
        if not outcome.delivered:
            status = "failed" if final or done > self.config.retries else "pending"
            if status == "pending":
                next_at = now + timedelta(seconds=self.config.retry_after_s * 4 ** (done - 1))
        record = {"at": now.isoformat(), "delivered": outcome.delivered, "error": outcome.error}
        await self.store.attempted(row["id"], record, status, next_at)
        self._log(row, outcome, done, next_at)
        if next_at is not None:
            self.poke()
        else:
            await self.store.forget_attachment_when_done(row["message"])
        report = {"channel": row["channel"], "status": status, "error": outcome.error}
        return report | ({"retry_at": next_at.isoformat()} if next_at else {})

    async def _send(self, row: dict[str, Any]) -> tuple[Outcome, bool]:
        """The outcome of sending ``row`` now, and whether trying again is pointless."""
        try:
            channel = await fill(self.config, row["channel"], self.credentials)
        except ChannelUnavailable as exc:
            return Outcome(False, str(exc)), row["channel"] not in self.config.channels
        attachment = None
        if row.get("attachment"):
            stored = await self.store.attachment(row["message"])
            attachment = Attachment(*stored) if stored else None
        message = Message(
            body=row["body"],
            title=row["title"],
            priority=row["priority"],
            kind=row["kind"],
            attachment=attachment,
        )
        try:
            outcome = await self.sender(channel.urls, message)
        except Exception as exc:  # a bug in a service's plugin is this channel's failure
            outcome = Outcome(False, f"{type(exc).__name__}: {exc}")
        return Outcome(outcome.delivered, channel.redact(outcome.error)), False

    def _log(
        self, row: dict[str, Any], outcome: Outcome, done: int, retry: datetime | None
    ) -> None:
        extra = {
            "delivery_id": row["id"],
            "channel": row["channel"],
            "session_id": row.get("session_id"),
            "attempt": done,
        }
        if outcome.delivered:
            log.info("notification delivered", extra=extra)
            return
        extra |= {"error": outcome.error, "retry_at": retry.isoformat() if retry else None}
        when = f"; trying again at {retry.isoformat()}" if retry else "; giving up"
        log.warning("notification not delivered: %s%s", outcome.error, when, extra=extra)

    async def _run(self) -> None:
        while True:
            self._poked.clear()
            try:
                for row in await self._digested(await self.store.claim_due(self.clock.now())):
                    self.spawn(self._attempt_logged(row))
                wake = await self.store.next_due()
            except Exception:
                log.exception("the outbox could not read its deliveries; trying again")
                wake = self.clock.now() + RETRY_LOOP_AFTER
            await self._wait(wake or self.clock.now() + IDLE)

    async def _digested(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``rows`` with the messages quiet hours held for one channel merged into one."""
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            if row.get("was_held") and not row.get("attachment"):
                groups.setdefault(row["channel"], []).append(row)
        merged: set[str] = set()
        for held in groups.values():
            if len(held) < 2:
                continue
            first, rest = held[0], held[1:]
            first["body"] = digest_of(held)
            first["title"] = f"{len(held)} messages held during quiet hours"
            await self.store.merge(first, first["body"], [r["id"] for r in rest])
            merged.update(r["id"] for r in rest)
            log.info(
                "messages held during quiet hours go out as one digest",
                extra={"channel": first["channel"], "count": len(held)},
            )
        return [row for row in rows if row["id"] not in merged]

    async def _attempt_logged(self, row: dict[str, Any]) -> None:
        try:
            await self.attempt(row)
        except Exception:
            log.exception("delivery %s could not be attempted", row["id"])

    async def _wait(self, wake: datetime) -> None:
        """Until ``wake``, or until :meth:`poke`."""
        sleeper = asyncio.ensure_future(self.clock.sleep_until(wake))
        poked = asyncio.ensure_future(self._poked.wait())
        try:
            await asyncio.wait({sleeper, poked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, poked):
                task.cancel()
            await asyncio.gather(sleeper, poked, return_exceptions=True)


def digest_of(held: list[dict[str, Any]]) -> str:
    """The held messages in one, oldest first, each under its own title."""
    return "\n\n".join(f"{row['title']}\n{row['body']}" for row in held)
