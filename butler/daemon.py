"""Assembles one butler: database, migrations, spawner, server; and stops it cleanly.

Start-up order: database (embedded when no URL is given), migrations, then the
server accepts. On SIGTERM or SIGINT the spawner stops accepting and drains
while the MCP server keeps serving (running sessions still need their
tools); then the server stops and the embedded database is let go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import time
from dataclasses import dataclass, field
from types import FrameType

import uvicorn

from butler.config import ButlerConfig
from butler.errors import ButlerError
from butler.hygiene import harden_process
from butler.runtimes.registry import get_adapter
from butler.scheduler import Scheduler
from butler.spawner.spawner import Spawner
from butler.store.credentials import CredentialStore
from butler.store.db import Database, redact_dsn
from butler.store.embedded import EmbeddedPostgres
from butler.store.memory import PostgresMemory
from butler.store.migrations import Migration, migrate
from butler.store.schedules import ScheduleStore
from butler.store.sessions import SessionStore
from butler.store.state import StateStore
from butler.telemetry import setup_telemetry
from butler.tools.context import ButlerContext

log = logging.getLogger("butler.daemon")

#: How long ``butler up`` waits for running sessions at shutdown before cancelling them.
DRAIN_TIMEOUT_S = 30.0


@dataclass
class OpenDatabase:
    """The database a daemon opened, and the embedded server behind it, if any."""

    db: Database
    embedded: EmbeddedPostgres | None = None
    applied: list[Migration] = field(default_factory=list)

    async def close(self) -> None:
        await self.db.close()
        if self.embedded is not None:
            await self.embedded.stop()


async def open_database(config: ButlerConfig) -> OpenDatabase:
    """Connect to the configured database (or start the embedded one) and migrate."""
    embedded = None
    dsn = config.butler.db.url
    if not dsn:
        embedded = EmbeddedPostgres()
        dsn = await embedded.start()
        log.info("embedded database started", extra={"pgdata": str(embedded.pgdata)})
    db = Database(dsn, config.db_schema)
    try:
        await db.connect()
        applied = await migrate(db)
    except BaseException:
        await db.close()
        if embedded is not None:
            await embedded.stop()
        raise
    log.info(
        "database ready",
        extra={
            "dsn": redact_dsn(dsn),
            "schema": db.schema,
            "migrations_applied": [m.version for m in applied],
        },
    )
    return OpenDatabase(db, embedded, applied)


async def assemble(config: ButlerConfig, db: Database) -> ButlerContext:
    """The butler's stores and spawner over an open database."""
    sessions = SessionStore(db)
    memory = PostgresMemory(db, config.butler.memory.max_episodes)
    spawner = Spawner(
        config,
        get_adapter(config.runtime.type, config.runtime, config.roster_dir),
        sessions,
        CredentialStore(db),
        memory=memory,
    )
    closed = await sessions.fail_unfinished("the daemon stopped while this session was open")
    swept = spawner.sweep()
    if closed or swept:
        log.info("recovered from an earlier crash", extra={"sessions": closed, "temp": len(swept)})
    return ButlerContext(
        config=config,
        db=db,
        state=StateStore(db),
        sessions=sessions,
        spawner=spawner,
        scheduler=Scheduler(config.butler.schedule, ScheduleStore(db), spawner),
    )


class ButlerServer(uvicorn.Server):
    """uvicorn, with a first signal that drains the spawner before stopping."""

    def __init__(self, config: uvicorn.Config, butler: ButlerContext, drain_s: float) -> None:
        super().__init__(config)
        self.butler = butler
        self.drain_s = drain_s
        self._draining: asyncio.Task[None] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._draining is not None:
            self.force_exit = True
            self.should_exit = True
            return
        log.info("shutting down", extra={"signal": signal.Signals(sig).name})
        self.butler.spawner.stop_accepting()
        self._draining = asyncio.get_event_loop().create_task(self._drain_then_exit())

    async def _drain_then_exit(self) -> None:
        cancelled = await self.butler.spawner.drain(self.drain_s)
        if cancelled:
            log.warning("cancelled running sessions at shutdown", extra={"count": cancelled})
        self.should_exit = True


async def serve(config: ButlerConfig, drain_s: float | None = None) -> None:
    """Run one butler until a signal stops it."""
    from butler.server import build_app

    started = time.monotonic()
    harden_process()
    setup_telemetry(f"butler-{config.name}")
    sock = listen(config)
    try:
        opened = await open_database(config)
    except BaseException:
        sock.close()
        raise
    try:
        butler = await assemble(config, opened.db)
        app = build_app(butler)
        uv_config = uvicorn.Config(
            app,
            host=config.butler.host,
            port=config.butler.port,
            log_config=None,
            lifespan="on",
            timeout_graceful_shutdown=5,
        )
        drain = config.butler.shutdown_timeout_s if drain_s is None else drain_s
        server = ButlerServer(uv_config, butler, drain)
        startup = asyncio.create_task(_announce(server, config, started))
        schedules = asyncio.create_task(start_schedules(server, butler))
        try:
            await server.serve(sockets=[sock])
        finally:
            sock.close()
            startup.cancel()
            await stop_schedules(schedules, butler)
            await butler.spawner.drain(0)
    finally:
        await opened.close()
    if not server.started:
        raise ButlerError(
            f"could not start serving on {config.butler.host}:{config.butler.port}; "
            "see the log lines above"
        )


def listen(config: ButlerConfig) -> socket.socket:
    """Bind the butler's port first, so a taken port fails before the database starts."""
    host, port = config.butler.host, config.butler.port
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ButlerError(
            f"cannot listen on {host}:{port}: {exc.strerror}; "
            "expected a free port (is another butler using it?)"
        ) from None
    return sock


async def start_schedules(server: uvicorn.Server, butler: ButlerContext) -> None:
    """Start firing schedules once the server accepts: their sessions call back into it."""
    while not server.started:
        await asyncio.sleep(0.02)
    if butler.scheduler is not None:
        try:
            await butler.scheduler.start()
        except Exception:
            log.exception("schedules could not start; the butler serves without them")


async def stop_schedules(starting: asyncio.Task[None], butler: ButlerContext) -> None:
    """Stop firing schedules (sessions they started were drained with the spawner's)."""
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    if butler.scheduler is not None:
        await butler.scheduler.stop()


async def _announce(server: uvicorn.Server, config: ButlerConfig, started: float) -> None:
    while not server.started:
        await asyncio.sleep(0.02)
    with contextlib.suppress(Exception):
        log.info(
            "butler serving",
            extra={
                "butler": config.name,
                "url": config.mcp_base_url,
                "mcp": f"{config.mcp_base_url}/mcp",
                "sse": f"{config.mcp_base_url}/sse",
                "startup_ms": int((time.monotonic() - started) * 1000),
            },
        )
