"""A whole roster in one process: what ``butler up`` and ``butler list`` do.

Every butler keeps what makes it a butler: its own port, its own schema, its
own spawner and schedules. What they share is the process and the database
server: the one given (``--database-url``, ``DATABASE_URL`` or a butler's own
``[butler.db] url``), else a single embedded PostgreSQL for all of them. One
SIGTERM or SIGINT drains every butler's sessions at once, then stops them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import uvicorn

from butler.config import ButlerConfig, load_config
from butler.daemon import (
    DRAIN_TIMEOUT_S,
    ButlerServer,
    assemble,
    listen,
    start_schedules,
    stop_schedules,
)
from butler.errors import ButlerError, ConfigError
from butler.store.db import Database
from butler.store.embedded import EmbeddedPostgres
from butler.store.migrations import migrate
from butler.telemetry import setup_telemetry
from butler.tools.context import ButlerContext

log = logging.getLogger("butler.roster")

#: The roster folder of prompt snippets, which is not a butler.
SHARED = "shared"


def butler_folders(roster_dir: Path) -> list[Path]:
    """Every sub-folder of the roster holding a butler.toml, by name."""
    if not roster_dir.is_dir():
        raise ConfigError(f"{roster_dir}: expected a roster folder holding butler folders")
    return sorted(
        p for p in roster_dir.iterdir() if p.name != SHARED and (p / "butler.toml").is_file()
    )


def load_roster(
    roster_dir: Path, only: Sequence[str] = (), db_url: str | None = None
) -> list[ButlerConfig]:
    """Load the roster's butlers (or the ``only`` ones) and check they can run together."""
    configs = [load_config(folder, db_url=db_url) for folder in butler_folders(roster_dir)]
    if not configs:
        raise ConfigError(f"{roster_dir}: no butler folders (sub-folders holding butler.toml)")
    names = [c.name for c in configs]
    unknown = [name for name in only if name not in names]
    if unknown:
        raise ConfigError(
            f"--only: no butler named {unknown[0]!r} in {roster_dir}; "
            f"expected some of {', '.join(names)}"
        )
    if only:
        configs = [c for c in configs if c.name in only]
    check_distinct(configs)
    return configs


def check_distinct(configs: Sequence[ButlerConfig]) -> None:
    """Two butlers of one process cannot share a port, a name or a schema."""
    for what, key in (
        ("port", lambda c: c.butler.port),
        ("name", lambda c: c.name),
        ("schema", lambda c: c.db_schema),
    ):
        seen: dict[object, ButlerConfig] = {}
        for config in configs:
            other = seen.setdefault(key(config), config)
            if other is not config:
                raise ConfigError(
                    f"{what} {key(config)} is claimed by both {other.name} ({other.config_dir}) "
                    f"and {config.name} ({config.config_dir}); expected one {what} per butler"
                )


def bind(config: ButlerConfig) -> socket.socket:
    """Listen on the butler's port now, so a taken port fails before anything starts."""
    try:
        sock = listen(config)
    except ButlerError as exc:
        raise ButlerError(f"{config.name}: {exc}") from None
    sock.set_inheritable(True)
    return sock


@contextlib.contextmanager
def bound(configs: Sequence[ButlerConfig]) -> Iterator[list[socket.socket]]:
    """A listening socket per butler, all closed on the way out."""
    sockets: list[socket.socket] = []
    try:
        for config in configs:
            sockets.append(bind(config))
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


class RosterServer(ButlerServer):
    """One butler's server of a roster: the roster, not each server, takes signals."""

    stopping = False

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.stopping = True
        super().handle_exit(sig, frame)


async def up(configs: Sequence[ButlerConfig], drain_s: float = DRAIN_TIMEOUT_S) -> None:
    """Run every butler of ``configs`` in this process until a signal stops them."""
    started = time.monotonic()
    setup_telemetry("butler")
    with bound(configs) as sockets:
        embedded = None
        dbs: list[Database] = []
        try:
            shared = None
            if any(not c.butler.db.url for c in configs):
                embedded = EmbeddedPostgres()
                shared = await embedded.start()
                log.info("embedded database started", extra={"pgdata": str(embedded.pgdata)})
            for config in configs:
                dbs.append(await open_schema(config, config.butler.db.url or shared or ""))
            butlers = [await assemble(c, db) for c, db in zip(configs, dbs, strict=True)]
            await serve_all(butlers, sockets, drain_s, started)
        finally:
            for db in dbs:
                await db.close()
            if embedded is not None:
                await embedded.stop()


async def open_schema(config: ButlerConfig, dsn: str) -> Database:
    """Connect to the butler's schema and migrate it."""
    db = Database(dsn, config.db_schema)
    await db.connect()
    try:
        await migrate(db)
    except BaseException:
        await db.close()
        raise
    return db


def _server(butler: ButlerContext, drain_s: float) -> RosterServer:
    from butler.server import build_app

    config = butler.config
    uv_config = uvicorn.Config(
        build_app(butler),
        host=config.butler.host,
        port=config.butler.port,
        log_config=None,
        lifespan="on",
        ws="none",  # no websocket route: skip importing a websocket stack at start
        timeout_graceful_shutdown=5,
    )
    return RosterServer(uv_config, butler, drain_s)


async def serve_all(
    butlers: Sequence[ButlerContext],
    sockets: Sequence[socket.socket],
    drain_s: float,
    started: float,
) -> None:
    """Serve every butler on its socket until all have stopped."""
    servers = [_server(b, drain_s) for b in butlers]
    loop = asyncio.get_running_loop()

    def on_signal(sig: int) -> None:
        # Every server drains at once; a second signal forces them all out.
        for server in servers:
            server.handle_exit(sig, None)

    def stop_the_rest() -> None:
        for server in servers:
            if not server.stopping:
                server.handle_exit(signal.SIGTERM, None)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    schedules = [asyncio.create_task(start_schedules(s, s.butler)) for s in servers]
    announce = asyncio.create_task(_announce(servers, started))
    tasks = [
        asyncio.create_task(s.serve(sockets=[sock]))
        for s, sock in zip(servers, sockets, strict=True)
    ]
    try:
        # A butler that stops on its own takes the others down with it: a
        # roster that is only partly up would look healthy to nobody.
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        stop_the_rest()
        await asyncio.wait(tasks)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        announce.cancel()
        for task, butler in zip(schedules, butlers, strict=True):
            await stop_schedules(task, butler)
        for butler in butlers:
            await butler.spawner.drain(0)
    for task in tasks:
        if task.exception() is not None:
            raise task.exception()  # type: ignore[misc]


async def _announce(servers: Sequence[RosterServer], started: float) -> None:
    while not all(s.started for s in servers):
        await asyncio.sleep(0.02)
    log.info(
        "roster serving",
        extra={
            "butlers": {s.butler.config.name: s.butler.config.mcp_base_url for s in servers},
            "startup_ms": int((time.monotonic() - started) * 1000),
        },
    )


@dataclass(frozen=True)
class ButlerStatus:
    """One line of ``butler list``."""

    name: str
    port: int
    runtime: str
    schedules: int
    status: str


async def statuses(configs: Sequence[ButlerConfig], timeout: float = 1.0) -> list[ButlerStatus]:
    """Each butler with whether its ``/health`` answers (probed all at once)."""
    found = await asyncio.gather(*(asyncio.to_thread(probe, c, timeout) for c in configs))
    return [
        ButlerStatus(c.name, c.butler.port, c.runtime.type, len(c.butler.schedule), status)
        for c, status in zip(configs, found, strict=True)
    ]


def probe(config: ButlerConfig, timeout: float = 1.0) -> str:
    """``up``, ``degraded`` (database down), ``down``, or ``other`` (someone else's port)."""
    url = f"{config.mcp_base_url}/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return "degraded" if exc.code == 503 else "down"
    except (OSError, ValueError):
        return "down"
    if not isinstance(body, dict) or body.get("butler") != config.name:
        return "other"
    return "up"
