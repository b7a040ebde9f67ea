"""``butler worker``: run the sessions of some butlers on this machine (docs/scaling.md).

For each butler it serves, the worker listens on the butler's job queue
(PgQueuer, in the butler's schema) with the butler's ``max_concurrent_sessions``
as the entrypoint's concurrency limit, which PgQueuer holds across every worker.
A picked session runs here through the spawner's steps for a worker
(:func:`butler.spawner.remote.run_job`): a private workspace and home, the
invocation with the daemon's session token, the jail, the adapter. Its result
goes back to the daemon, which records it.

Before it takes any work, the worker asks each butler's ``/health`` at the
address its runtimes will call: a butler it cannot reach is named in one line
and gets no entrypoint (a session picked here could not call its tools).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from dataclasses import dataclass
from datetime import timedelta

import asyncpg
import httpx
from pgqueuer import AsyncpgDriver, Queries, QueueManager
from pgqueuer.models import Job

from butler.config import ButlerConfig
from butler.errors import ButlerError, UserError
from butler.runtimes.registry import get_adapter
from butler.sandbox import resolve_mode
from butler.spawner.remote import run_job
from butler.store.credentials import CredentialStore
from butler.store.db import Database, quote_ident
from butler.store.session_jobs import ENTRYPOINT, SessionJob, SessionJobs

log = logging.getLogger(__name__)

#: A picked session whose worker sent no heartbeat for this long is another worker's.
HEARTBEAT_TIMEOUT = timedelta(seconds=60)


def worker_name() -> str:
    """How this worker is named on session rows: host and process."""
    return f"{socket.gethostname()}:{os.getpid()}"


async def reachable(config: ButlerConfig) -> str | None:
    """None when the butler answers at the address its runtimes call; else why not."""
    url = f"{config.mcp_base_url}/health"
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            answer = await client.get(url)
    except httpx.HTTPError as exc:
        return f"{url}: {type(exc).__name__}: {exc or 'no answer'}"
    if answer.status_code != 200:
        return f"{url}: HTTP {answer.status_code}"
    return None


@dataclass
class Served:
    """One butler this worker runs sessions for."""

    config: ButlerConfig
    db: Database
    listener: asyncpg.Connection
    manager: QueueManager


class Worker:
    """Runs the sessions of ``configs`` that their daemons hand to workers."""

    def __init__(self, configs: list[ButlerConfig], database_url: str) -> None:
        self.configs = configs
        self.database_url = database_url
        self.name = worker_name()
        self.served: list[Served] = []

    async def start(self) -> list[str]:
        """Connect to each butler that can be served; return one line per one that cannot."""
        refused = []
        for config in self.configs:
            if config.runtime.workers == "local":
                refused.append(
                    f"{config.name}: runs its sessions in its daemon ([butler.runtime] "
                    'workers = "local"); set workers = "remote" for it to use workers'
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
            self.served.append(await self._serve(config))
        return refused

    async def _serve(self, config: ButlerConfig) -> Served:
        db = Database(self.database_url, config.db_schema, max_size=4)
        await db.connect()
        listener = await asyncpg.connect(
            self.database_url, server_settings={"search_path": quote_ident(config.db_schema)}
        )
        manager = QueueManager(Queries(AsyncpgDriver(listener)))
        adapter = get_adapter(config.runtime.type, config.runtime, config.roster_dir)
        credentials = CredentialStore(db, dict(os.environ))
        sandbox = resolve_mode(
            config.butler.sandbox, f"{config.config_dir / 'butler.toml'}: [butler.sandbox]"
        )
        jobs = SessionJobs(db)

        @manager.entrypoint(ENTRYPOINT, concurrency_limit=config.runtime.max_concurrent_sessions)
        async def session(job: Job) -> None:
            if job.payload is None:
                return
            picked = SessionJob.decode(job.payload)
            log.info(
                "session picked", extra={"butler": config.name, "session_id": picked.session_id}
            )
            handed = await run_job(config, adapter, credentials, sandbox, picked)
            await jobs.put_result(picked.session_id, self.name, handed)

        return Served(config, db, listener, manager)

    async def run(self) -> None:
        """Take sessions until cancelled; running ones finish first (a drain)."""
        runs = [
            asyncio.create_task(served.manager.run(heartbeat_timeout=HEARTBEAT_TIMEOUT))
            for served in self.served
        ]
        try:
            await asyncio.gather(*runs)
        finally:
            for served in self.served:
                served.manager.shutdown.set()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.gather(*runs, return_exceptions=True)
            await self.close()

    async def close(self) -> None:
        for served in self.served:
            with contextlib.suppress(Exception):
                await served.listener.close()
            await served.db.close()


async def serve(configs: list[ButlerConfig], database_url: str) -> None:
    """The worker's life: refuse what it cannot serve in one line each, then take work."""
    if not database_url:
        raise UserError(
            "butler worker: no database: give --database-url (or DATABASE_URL) naming the "
            "PostgreSQL the butlers' daemons use"
        )
    worker = Worker(configs, database_url)
    refused = await worker.start()
    for line in refused:
        log.error(line)
    if not worker.served:
        await worker.close()
        raise ButlerError("butler worker: no butler to serve here; see the lines above")
    names = ", ".join(served.config.name for served in worker.served)
    log.info("worker %s takes sessions of %s", worker.name, names)
    await worker.run()
