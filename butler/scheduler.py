"""Schedules: ``[[butler.schedule]]`` prompts fired on cron expressions.

When a schedule is due is a pure function of its cron expression, its time
zone and the moment it last fired (:func:`next_due`). The :class:`Scheduler`
keeps fire times in the database (:mod:`butler.store.schedules`), claims a
slot *before* starting the session so a crash mid-session never fires it
again, and runs each session in a background task so a long session does not
hold up the next schedule. A slot missed while the daemon was down fires once
at start-up, however many slots were missed.

Time comes from a :class:`Clock`, so tests move it by hand instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter

from butler.clock import Clock, SystemClock
from butler.config import ScheduleConfig
from butler.errors import UserError
from butler.notify import Message, Notifier, NotifyRefused
from butler.spawner.result import SpawnerResult
from butler.spawner.spawner import SHUTDOWN, Spawner, TriggerRequest
from butler.store.schedules import FiredVia, ScheduleEntry, ScheduleRecord, ScheduleStore

log = logging.getLogger(__name__)

#: How long the loop waits before trying again after the database failed it.
RETRY_AFTER = timedelta(seconds=30)
#: How soon the loop looks again at a slot that is due but was not fired.
RETRY_SOON = timedelta(seconds=1)


class ScheduleNotFound(UserError):
    """A schedule name that the butler does not have."""


def next_due(cron: str, timezone: str, after: datetime) -> datetime:
    """The first slot of ``cron`` strictly after ``after``, as a UTC datetime.

    The expression is read in ``timezone``: ``0 8 * * *`` in Europe/Paris is
    07:00 UTC in winter and 06:00 UTC in summer.
    """
    local = after.astimezone(ZoneInfo(timezone))
    slot: datetime = croniter(cron, local).get_next(datetime)
    return slot.astimezone(UTC)


@dataclass(frozen=True)
class Fired:
    """One schedule fired: its session runs in the background."""

    name: str
    fired_at: datetime
    via: FiredVia

    @property
    def trigger_source(self) -> str:
        return f"schedule:{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "fired_at": self.fired_at.isoformat(),
            "via": self.via,
            "trigger_source": self.trigger_source,
        }


class Scheduler:
    """Fires one butler's schedules through its spawner."""

    def __init__(
        self,
        schedules: Sequence[ScheduleConfig],
        store: ScheduleStore,
        spawner: Spawner,
        clock: Clock | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.schedules = {s.name: s for s in schedules}
        self.store = store
        self.spawner = spawner
        self.clock = clock or SystemClock()
        #: Sends each schedule's answer to the person, as its ``notify`` says.
        self.notifier = notifier
        self._synced = False
        self._loop: asyncio.Task[None] | None = None
        self._sessions: set[asyncio.Task[SpawnerResult | None]] = set()

    async def start(self) -> None:
        """Catch up on missed slots and keep firing until :meth:`stop`."""
        await self._sync()
        waiting = [s.name for s in self.schedules.values() if s.notify in ("always", "on-failure")]
        if waiting and self.notifier is not None and not self.notifier.channels:
            log.info(
                "schedules send their answer once a channel is named (docs/notify.md)",
                extra={"schedules": waiting},
            )
        if self.schedules and self._loop is None:
            self._loop = asyncio.create_task(self._run(), name="butler-scheduler")

    async def stop(self) -> None:
        """Stop firing; cancel sessions still running (the spawner has drained by now)."""
        tasks = [t for t in (self._loop, *self._sessions) if t is not None]
        self._loop = None
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def tick(self, via: FiredVia = "tick", caller: str | None = None) -> list[Fired]:
        """Fire every schedule due now; return what fired.

        ``caller`` is the running session that asked, recorded as the parent of each.
        """
        await self._sync()
        if not self.spawner.accepting:
            # A slot claimed now would be refused by the spawner and lost;
            # left unclaimed it fires at the next start-up instead.
            return []
        now = self.clock.now()
        fired = []
        for name, record in (await self.store.all()).items():
            schedule = self.schedules.get(name)
            if schedule is None:
                continue
            slot = next_due(schedule.cron, schedule.timezone, record.since)
            if slot <= now and await self.store.claim(name, slot, now, via):
                self._fire(schedule, caller)
                fired.append(Fired(name, now, via))
        return fired

    async def run_now(
        self, name: str, wait: bool = False, caller: str | None = None
    ) -> tuple[Fired, SpawnerResult | None]:
        """Fire the schedule ``name`` at once, whether due or not.

        With ``wait``, also wait for its session and return the result; the
        session goes on in the background if the waiting caller goes away.
        ``caller`` is the running session that asked, recorded as the parent.
        """
        schedule = self.schedules.get(name)
        if schedule is None:
            known = ", ".join(sorted(self.schedules)) or "none configured"
            raise ScheduleNotFound(f"no schedule named {name!r}; this butler has: {known}")
        await self._sync()
        # Admitted first: a refused run (queue full, shutting down) raises
        # Rejected to the caller and leaves "last fired" untouched.
        _, started = await self.spawner.start(self._request(schedule, caller))
        now = self.clock.now()
        await self.store.record(name, now, "manual")
        task = self._watch(schedule, self._outcome(schedule, started))
        fired = Fired(name, now, "manual")
        return fired, (await asyncio.shield(task) if wait else None)

    async def listing(self) -> list[dict[str, Any]]:
        """Each schedule with when it last fired and when it is next due."""
        await self._sync()
        records = await self.store.all()
        return [self._describe(s, records.get(s.name)) for s in self.schedules.values()]

    def _describe(self, schedule: ScheduleConfig, record: ScheduleRecord | None) -> dict[str, Any]:
        since = record.since if record else self.clock.now()
        last = record.last_fired_at if record else None
        return {
            "name": schedule.name,
            "cron": schedule.cron,
            "timezone": schedule.timezone,
            "prompt": schedule.prompt,
            "last_fired": last.isoformat() if last else None,
            "last_fired_via": record.last_fired_via if record else None,
            "next_due": next_due(schedule.cron, schedule.timezone, since).isoformat(),
        }

    async def _sync(self) -> None:
        if self._synced:
            return
        entries = [ScheduleEntry(s.name, s.cron, s.timezone) for s in self.schedules.values()]
        await self.store.sync(entries, self.clock.now())
        self._synced = True

    def _fire(
        self, schedule: ScheduleConfig, caller: str | None = None
    ) -> asyncio.Task[SpawnerResult | None]:
        """Start the schedule's session in the background (its fire is already recorded)."""
        log.info("schedule fired", extra={"schedule": schedule.name})
        return self._watch(schedule, self._session(schedule, caller))

    def _watch(
        self, schedule: ScheduleConfig, session: Coroutine[Any, Any, SpawnerResult | None]
    ) -> asyncio.Task[SpawnerResult | None]:
        """Run ``session`` in a task that :meth:`stop` cancels."""
        task = asyncio.create_task(session, name=f"schedule:{schedule.name}")
        self._sessions.add(task)
        task.add_done_callback(self._sessions.discard)
        return task

    @staticmethod
    def _request(schedule: ScheduleConfig, caller: str | None) -> TriggerRequest:
        if caller:  # a session fired it: it counts as that session's trigger
            return TriggerRequest(
                prompt=schedule.prompt,
                trigger_source="trigger",
                caller_session_id=caller,
                metadata={"schedule": schedule.name},
            )
        return TriggerRequest(prompt=schedule.prompt, trigger_source=f"schedule:{schedule.name}")

    async def _session(
        self, schedule: ScheduleConfig, caller: str | None = None
    ) -> SpawnerResult | None:
        try:
            # no session waits on this task, so it may wait for a slot itself
            result = await self.spawner.trigger(self._request(schedule, caller), background=True)
        except Exception:
            log.exception("scheduled session crashed", extra={"schedule": schedule.name})
            return None
        return await self._ended(schedule, result)

    async def _outcome(
        self, schedule: ScheduleConfig, started: asyncio.Task[SpawnerResult]
    ) -> SpawnerResult | None:
        """Wait for a session already admitted and started; log how it ended."""
        log.info("schedule fired", extra={"schedule": schedule.name})
        try:
            result = await asyncio.shield(started)
        except asyncio.CancelledError:
            if not started.done():
                started.cancel(SHUTDOWN)
            raise
        except Exception:
            log.exception("scheduled session crashed", extra={"schedule": schedule.name})
            return None
        return await self._ended(schedule, result)

    async def _ended(self, schedule: ScheduleConfig, result: SpawnerResult) -> SpawnerResult:
        """Log how the session ended and send its answer as the schedule says."""
        if not result.success:
            log.warning(
                "scheduled session failed",
                extra={"schedule": schedule.name, "error": result.error},
            )
        await self._deliver(schedule, result)
        return result

    async def _deliver(self, schedule: ScheduleConfig, result: SpawnerResult) -> None:
        """Hand the answer (or the failure) to the notifier; never fails the session."""
        notifier = self.notifier
        if notifier is None or not notifier.channels:
            return
        mode = schedule.notify or notifier.settings.schedules
        if mode == "never" or (mode == "on-failure" and result.success):
            return
        try:
            await notifier.deliver(
                answer(notifier.config.name, schedule.name, result),
                schedule.channels(),
                session_id=result.session_id,
                source=f"schedule:{schedule.name}",
            )
        except NotifyRefused as exc:
            log.warning(
                "the schedule's answer was not sent: %s", exc, extra={"schedule": schedule.name}
            )
        except Exception:
            log.exception(
                "the schedule's answer could not be handed over", extra={"schedule": schedule.name}
            )

    async def _run(self) -> None:
        while True:
            try:
                await self.tick(via="clock")
                wake = await self._next_wake()
            except Exception:
                log.exception("scheduler could not check its schedules; retrying")
                wake = self.clock.now() + RETRY_AFTER
            await self.clock.sleep_until(wake)

    async def _next_wake(self) -> datetime:
        records = await self.store.all()
        now = self.clock.now()
        slots = [
            next_due(s.cron, s.timezone, records[s.name].since if s.name in records else now)
            for s in self.schedules.values()
        ]
        # A slot still due was not claimed (another process has it, or the spawner
        # is draining): look again shortly rather than spin.
        return max(min(slots), now + RETRY_SOON)


def answer(butler: str, schedule: str, result: SpawnerResult) -> Message:
    """What the person receives when a schedule's session ends."""
    title = f"{butler}: {schedule}"
    if result.success:
        return Message(body=result.output.strip() or "(the session gave no answer)", title=title)
    body = f"The schedule {schedule} failed: {result.error or 'no reason recorded'}"
    if result.output.strip():
        body += f"\n\nWhat it wrote before:\n{result.output.strip()}"
    return Message(body=body, title=f"{title} failed", kind="failure")
