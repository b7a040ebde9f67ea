"""``butler worker``: run the sessions of some butlers on this machine (docs/scaling.md).

For each butler it serves, the worker listens on the butler's job queue
(PgQueuer, in the butler's schema) with the butler's ``max_concurrent_sessions``
as the entrypoint's concurrency limit, which PgQueuer holds across every worker.
A picked session runs here through the local path's steps
(:mod:`butler.spawner.worker_runs`):
its memory, a private workspace with its attachments, the invocation with the
session token minted at the claim (:mod:`.claim`), the jail and its egress
proxy, the adapter. Its result
goes back to the daemon, which records it. While it runs, this machine's
ledger names it (:mod:`.ledger`), so that a worker started after this one was
killed records it and cleans up after it (:mod:`.sweep`) before taking work.

Before it takes any work, the worker asks each butler's ``/health`` at the
address its runtimes will call: a butler it cannot reach is named in one line
and gets no entrypoint (a session picked here could not call its tools).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import timedelta

import asyncpg
import httpx
from pgqueuer import QueueManager
from pgqueuer.models import Job as QueuedJob

from butler.config import ButlerConfig
from butler.errors import ButlerError, UserError
from butler.spawner.execution import Execution
from butler.spawner.remote import PICKUP_GRACE_S, Job
from butler.spawner.worker_runs import WorkerRuns
from butler.store.credentials import CredentialStore
from butler.store.db import Database, quote_ident
from butler.store.migrations import known, level
from butler.store.outages import FIRST_BACKOFF_S, MAX_BACKOFF_S, UNREACHABLE
from butler.store.session_jobs import ENTRYPOINT, SessionJobs, WorkerSessionRows
from butler.store.worker_role import reaches_schema, reads_butler_rows
from butler.workers.carried_memory import CarriedMemory
from butler.workers.claim import HEARTBEAT_TIMEOUT_S, claim
from butler.workers.handback import run_claimed
from butler.workers.listen import RelisteningDriver
from butler.workers.outage_queries import OutageQueries
from butler.workers.registry import Registry
from butler.workers.sweep import sweep_after_killed

log = logging.getLogger(__name__)

#: Pooled connections of each butler's queue, for its queries (its LISTEN has its own).
QUEUE_CONNECTIONS = 2
#: How often PgQueuer looks at the queue when no NOTIFY woke it (its own default).
POLL_S = 30.0
#: Sessions a worker runs at once for each butler when ``--capacity`` does not say: at
#: least 2, since PgQueuer wants twice its batch (we take one job at a time, to spread).
DEFAULT_CAPACITY = max(2, os.cpu_count() or 2)


@dataclass(frozen=True)
class WorkerSettings:
    """How a worker takes work, from its command line (``butler worker --help``)."""

    #: Sessions run at once for each butler.
    capacity: int = DEFAULT_CAPACITY
    #: A picked session whose worker sent no heartbeat for this long is taken as
    #: stopped (recorded, never run again); the worker beats twice as often.
    heartbeat_timeout_s: float = HEARTBEAT_TIMEOUT_S
    #: How often the queue is looked at when no NOTIFY woke the worker.
    poll_s: float = POLL_S


def worker_name() -> str:
    """How this worker is named on session rows: host and process."""
    return f"{socket.gethostname()}:{os.getpid()}"


async def reachable(config: ButlerConfig) -> str | None:
    """None when the butler answers at the address its runtimes call; else why not."""
    url = f"{config.callback_url}/health"
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            answer = await client.get(url)
    except httpx.HTTPError as exc:
        return f"{url}: {type(exc).__name__}: {exc or 'no answer'}"
    if answer.status_code != 200:
        return f"{url}: HTTP {answer.status_code}"
    return None


async def disagreeing(db: Database) -> str | None:
    """None when the butler's schema is at the migration this worker speaks; else why
    not (which of the two to upgrade): a worker and a daemon of different versions
    would read each other's jobs and rows wrongly."""
    import butler

    here, there = known(), await level(db)
    if here == there:
        return None
    upgrade = (
        "upgrade this worker"
        if there > here
        else "upgrade its daemon and restart it (its start migrates the database)"
    )
    return (
        f"its database is at migration {there:03d} and this worker (butler "
        f"{butler.__version__}) speaks {here:03d}: {upgrade}"
    )


def ungranted(config: ButlerConfig) -> str:
    """Why a worker's own role cannot serve ``config``: nothing granted it the queue."""
    return (
        f"this worker's database role has no grant on its schema {config.db_schema!r}: its "
        "daemon is older than migration 020, or `butler worker --init-role` did not name "
        "this butler (run it again with --only naming it, and the daemons' database URL)"
    )


async def _execution(config: ButlerConfig, db: Database, memory: CarriedMemory) -> Execution:
    """How ``config``'s sessions run here, as far as this worker's database role reaches;
    their memory is what each job carried (``memory``), whatever the role.

    A worker on its own role (``butler worker --init-role``) reads none of the butler's
    rows: its runtimes' credentials come from this machine's environment. One on a role
    that reads them (the daemons' URL) is told, once, that a stolen copy of its URL is
    every butler's whole database."""
    execution = Execution.over(config, db, base_url=config.callback_url)
    if await reads_butler_rows(db):
        log.warning(
            "this worker's database role reads the butler's sessions, state and credentials: "
            "more than a worker needs; give it a role of its own (butler worker --init-role, "
            "docs/scaling.md)",
            extra={"butler": config.name},
        )
        return dataclasses.replace(execution, memory=memory)
    log.info(
        "this worker's database role reaches only the job queue: its runtimes take their "
        "credentials from this machine's environment",
        extra={"butler": config.name},
    )
    rows = WorkerSessionRows(db, config.butler.max_output_bytes)
    return dataclasses.replace(
        execution, credentials=CredentialStore(None), memory=memory, sessions=rows
    )


@dataclass
class Served:
    """One butler this worker runs sessions for."""

    config: ButlerConfig
    db: Database
    #: PgQueuer's connections to dequeue, beat and complete. A pool, not one connection:
    #: after a database outage the pool connects again, so running sessions keep their
    #: heartbeats; the LISTEN connection is made again by :mod:`.listen`.
    queue: asyncpg.Pool
    manager: QueueManager


class Worker:
    """Runs the sessions of ``configs`` that their daemons hand to workers."""

    def __init__(
        self,
        configs: list[ButlerConfig],
        database_url: str,
        settings: WorkerSettings = WorkerSettings(),
    ) -> None:
        self.configs = configs
        self.database_url = database_url
        self.settings = settings
        self.name = worker_name()
        self.served: list[Served] = []
        self.registry = Registry(self.name, settings.capacity, settings.heartbeat_timeout_s / 2)

    async def start(self) -> list[str]:
        """Connect to each butler that can be served; return one line per one that cannot."""
        refused = []
        for config in self.configs:
            if config.runtime.workers == "local":
                refused.append(
                    f"{config.name}: runs its sessions in its daemon ([butler.runtime] "
                    'workers = "local"); set workers = "any" or "remote" for it to use workers'
                )
                continue
            why = await reachable(config)
            if why is not None:
                refused.append(
                    f"{config.name}: cannot reach the butler where its runtimes would call it "
                    f"({why}); this worker takes none of its sessions. Check [butler] host "
                    "and port, and the network between the machines"
                )
                continue
            # Its daemon made the schema; a worker's own role may not make one.
            db = Database(self.database_url, config.db_schema, max_size=4, create_schema=False)
            await db.connect()
            # Checked before this worker writes anything there (its sweep, its row).
            try:
                why = await disagreeing(db) if await reaches_schema(db) else ungranted(config)
            except asyncpg.InsufficientPrivilegeError:
                why = ungranted(config)
            if why is not None:
                await db.close()
                refused.append(f"{config.name}: {why}; this worker takes none of its sessions")
                continue
            self.served.append(await self._serve(config, db))
        return refused

    async def _serve(self, config: ButlerConfig, db: Database) -> Served:
        settings = {"search_path": quote_ident(config.db_schema)}
        queue = await asyncpg.create_pool(
            self.database_url, min_size=1, max_size=QUEUE_CONNECTIONS, server_settings=settings
        )

        def listening() -> Awaitable[asyncpg.Connection]:
            return asyncpg.connect(self.database_url, timeout=10, server_settings=settings)

        queries = OutageQueries(RelisteningDriver(queue, listening))
        manager = QueueManager(queries)
        jobs = SessionJobs(db)
        # The runtime calls its butler across the network, not on loopback.
        memory = CarriedMemory()
        runs = WorkerRuns(await _execution(config, db, memory))
        await sweep_after_killed(config, db, queries, self.name)

        @manager.entrypoint(ENTRYPOINT, concurrency_limit=config.runtime.max_concurrent_sessions)
        async def session(queued: QueuedJob) -> None:
            try:
                job = Job.decode(queued.payload or b"")
            except ValueError as exc:  # only the daemon writes jobs: nothing to run
                log.error("job %s dropped: %s", queued.id, exc, extra={"butler": config.name})
                return
            sid = job.session.id
            log.info("session picked", extra={"butler": config.name, "session_id": sid})
            bound = (job.session.timeout_s or config.runtime.timeout_s) + PICKUP_GRACE_S
            silence = self.settings.heartbeat_timeout_s
            pickup = await claim(jobs, self.name, sid, bound, silence)
            if pickup is not None:
                memory.carry(sid, job.memory)
                try:
                    await run_claimed(runs, jobs, self.name, job, pickup, int(queued.id))
                finally:
                    memory.drop(sid)

        return Served(config, db, queue, manager)

    async def run(self) -> None:
        """Take sessions until cancelled; running ones finish first (a drain)."""
        try:
            await self.registry.register(
                [(s.config.name, s.db, s.manager.queue_manager_id) for s in self.served]
            )
        except BaseException:
            await self.close()
            raise
        runs = [asyncio.create_task(self._take_work(served)) for served in self.served]
        beats = asyncio.create_task(self.registry.beat_forever())
        try:
            await asyncio.gather(*runs)
        finally:
            for served in self.served:
                served.manager.shutdown.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.gather(*runs, return_exceptions=True)
            beats.cancel()  # listed until its running sessions are done
            await self.registry.leave()
            await self.close()

    async def _take_work(self, served: Served) -> None:
        """PgQueuer's loop for one butler, until shut down. Its looks at the queue wait out
        an outage (:mod:`.outage_queries`); should the database's going end it some other way,
        it starts again (after the sessions it held are done), never ending the worker."""
        pause = FIRST_BACKOFF_S
        while True:
            try:
                await served.manager.run(
                    dequeue_timeout=timedelta(seconds=self.settings.poll_s),
                    heartbeat_timeout=timedelta(seconds=self.settings.heartbeat_timeout_s),
                    batch_size=1,
                    max_concurrent_tasks=self.registry.capacity,
                )
                return
            except UNREACHABLE as exc:
                if served.manager.shutdown.is_set():
                    return
                log.warning(
                    "the queue's loop stopped (the database is away: %s): starting it again",
                    type(exc).__name__,
                    extra={"butler": served.config.name},
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_BACKOFF_S)

    async def close(self) -> None:
        for served in self.served:
            with contextlib.suppress(Exception):
                await served.queue.close()
            await served.db.close()


async def serve(
    configs: list[ButlerConfig], database_url: str, settings: WorkerSettings = WorkerSettings()
) -> None:
    """The worker's life: refuse what it cannot serve in one line each, then take work."""
    if not database_url:
        raise UserError(
            "butler worker: no database: give --database-url (or DATABASE_URL) naming the "
            "PostgreSQL the butlers' daemons use"
        )
    worker = Worker(configs, database_url, settings)
    refused = await worker.start()
    for line in refused:
        log.error(line)
    if not worker.served:
        await worker.close()
        raise ButlerError("butler worker: no butler to serve here; see the lines above")
    names = ", ".join(served.config.name for served in worker.served)
    log.info("worker %s takes sessions of %s", worker.name, names)
    await worker.run()
