"""A whole roster in one process: what ``butler up`` (and ``butler run``, a roster of one) does.

Every butler keeps what makes it a butler: its own port, its own schema, its
own spawner and schedules. What they share is the process and the database
server: the one given (``--database-url``, ``DATABASE_URL`` or a butler's own
``[butler.db] url``), else a single embedded PostgreSQL for all of them. One
SIGTERM, SIGINT or SIGHUP drains every butler's sessions at once, then stops them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
import time
from collections.abc import Iterator, Sequence

import uvicorn

from butler.adapters.mcp import defer_wire_models
from butler.adapters.uvicorn import Server
from butler.config import ButlerConfig
from butler.config.watch import current_digest
from butler.context import ButlerContext
from butler.errors import ButlerError
from butler.heap import settle_for_serving
from butler.http_quiet import Traffic
from butler.hygiene import harden_process
from butler.logs import current_butler
from butler.paths import note_serving
from butler.roster_folders import load_roster as load_roster  # where callers found it
from butler.roster_folders import roster_names
from butler.roster_open import Opened, assemble_all, open_all
from butler.sandbox import probe_if_used
from butler.security.owner_token import owner_token
from butler.store.install import Leases
from butler.store.opening import start_embedded
from butler.telemetry import setup_telemetry
from butler.webterm.endpoint import MAX_MESSAGE
from butler.webterm.protocol import websocket_protocol

log = logging.getLogger("butler.roster")


def bind(config: ButlerConfig) -> socket.socket:
    """Listen on the butler's port now, so a taken port fails before anything starts."""
    host, port = config.butler.host, config.butler.port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # asyncio sets TCP_NODELAY on accepted connections only when the listening socket
    # says IPPROTO_TCP (proto 0 does not count): without it, small response writes
    # wait on the client's delayed ACK, ~40 ms per MCP call.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ButlerError(
            f"cannot listen on {host}:{port}: {exc.strerror}; "
            "expected a free port (is another butler using it?)"
        ) from None
    sock.set_inheritable(True)
    return sock


@contextlib.contextmanager
def bound(configs: Sequence[ButlerConfig], named: bool) -> Iterator[list[socket.socket]]:
    """A listening socket per butler, all closed on the way out."""
    sockets: list[socket.socket] = []
    try:
        for config in configs:
            try:
                sockets.append(bind(config))
            except ButlerError as exc:
                raise ButlerError(f"{config.name}: {exc}" if named else str(exc)) from None
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


class ButlerServer(Server):
    """One butler's uvicorn: a first signal drains its spawner, a second forces the exit.

    The roster, not each server, takes the signals (:func:`serve_all`) and hands
    them to every server's :meth:`signalled`.
    """

    def __init__(self, butler: ButlerContext) -> None:
        from butler.server import build_app  # imported while the database opened (up)

        config = butler.config
        self.traffic = Traffic(build_app(butler))
        super().__init__(
            uvicorn.Config(
                self.traffic,
                host=config.butler.host,
                port=config.butler.port,
                log_config=None,
                lifespan="on",
                # The builders' terminals; imported at the first, and a frame larger
                # than the endpoint takes is refused before it is buffered whole.
                ws=websocket_protocol,  # type: ignore[arg-type]
                ws_max_size=MAX_MESSAGE * 4,
                timeout_graceful_shutdown=5,
            )
        )
        self.butler = butler
        self.stopping = False
        self._draining: asyncio.Task[None] | None = None

    def signalled(self, sig: int) -> None:
        """A stop signal: drain this butler's sessions, then stop; a second one, stop now."""
        self.stopping = True
        if self._draining is not None:
            self.stop(force=True)
            return
        log.info(
            "shutting down",
            extra={"butler": self.butler.config.name, "signal": signal.Signals(sig).name},
        )
        self.butler.spawner.stop_accepting()
        self._draining = asyncio.get_running_loop().create_task(self._drain_then_exit())

    async def _drain_then_exit(self) -> None:
        drain_s = self.butler.config.butler.shutdown_timeout_s
        began = time.monotonic()
        cancelled = await self.butler.spawner.drain(drain_s)
        if cancelled:
            log.warning(
                "cancelled running sessions at shutdown",
                extra={"butler": self.butler.config.name, "count": cancelled},
            )
        # Serve on until the callers owed a reply have it and are done with their follow-ups.
        await self.traffic.settled(self.open_peers, drain_s, since=began)
        self.stop()


async def up(configs: Sequence[ButlerConfig], *, named: bool = True) -> None:
    """Run every butler of ``configs`` in this process until a signal stops them.

    ``butler run`` is a roster of one (``named=False``: its errors need no
    butler name in front).
    """
    started = time.monotonic()
    harden_process()
    # The serving code (FastMCP and the MCP SDK, the channels) is most of a start's
    # imports: a thread imports it while the database opens, which is mostly waiting.
    importing = asyncio.create_task(asyncio.to_thread(import_serving))
    setup_telemetry(f"butler-{configs[0].name}" if len(configs) == 1 else "butler")
    # Whether a jail starts here is asked by starting one: do it while the database opens.
    probing = asyncio.create_task(asyncio.to_thread(probe_if_used, configs))
    with bound(configs, named) as sockets:
        embedded = None
        opened = Opened()
        try:
            shared = None
            if any(not c.butler.db.url for c in configs):
                embedded, shared = await start_embedded()
            opened = await open_all(configs, shared)
            await probing
            await importing
            from butler import roster_channels  # imported by the thread above

            switchboard = roster_channels.plan(configs, lambda: roster_names(configs[0].roster_dir))
            butlers = await assemble_all(configs, opened.databases)
            roster_channels.attach(butlers, switchboard)
            await serve_all(butlers, sockets, started, opened.leases)
        finally:
            await opened.close()
            if embedded is not None:
                await embedded.stop()
            # An error above must not leave the thread's import unawaited.
            await asyncio.gather(importing, probing, return_exceptions=True)


def import_serving() -> None:
    """Import what serving needs and opening the database does not.

    The MCP SDK's wire models are left unbuilt (:func:`~butler.adapters.mcp.
    defer_wire_models`): :func:`butler.server.warm_up` builds those a tool session
    uses before ``/health`` answers.
    """
    defer_wire_models()
    import butler.roster_channels
    import butler.server  # noqa: F401


#: Signals that drain and stop the roster; a terminal hanging up (SIGHUP) is a stop
#: too, and must not kill the process before its sessions and database are closed.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


async def serve_all(
    butlers: Sequence[ButlerContext],
    sockets: Sequence[socket.socket],
    started: float,
    leases: Sequence[Leases] = (),
) -> None:
    """Serve every butler on its socket until all have stopped (or one loses its schema)."""
    from butler import roster_channels  # imported while the database opened (up)

    for butler in butlers:
        butler.peers = list(butlers)  # the roster page shows them all
    servers = [ButlerServer(b) for b in butlers]
    loop = asyncio.get_running_loop()

    def on_signal(sig: int) -> None:
        # Every server drains at once; a second signal forces them all out.
        for server in servers:
            server.signalled(sig)

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_signal, sig)
    schedules = [asyncio.create_task(start_schedules(s)) for s in servers]
    serving = lambda: all(s.started for s in servers)  # noqa: E731
    channels = asyncio.create_task(roster_channels.start_when_serving(butlers, serving))
    announce = asyncio.create_task(_announce(servers, started))
    watching = asyncio.create_task(watch_configs(butlers))
    tasks = [asyncio.create_task(_serve(s, sock)) for s, sock in zip(servers, sockets, strict=True)]
    keeping = [asyncio.create_task(lease.keep()) for lease in leases]
    try:
        # A butler that stops on its own takes the others down with it: a
        # roster that is only partly up would look healthy to nobody. So does
        # one whose schema another daemon took while the database restarted.
        await asyncio.wait([*tasks, *keeping], return_when=asyncio.FIRST_COMPLETED)
        lost = [k.exception() for k in keeping if k.done() and not k.cancelled()]
        for error in filter(None, lost):
            log.error(str(error))  # said at once: stopping may meet the database's trouble too
        for server in servers:
            if not server.stopping:
                server.signalled(signal.SIGTERM)
        await asyncio.wait(tasks)
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        announce.cancel()
        watching.cancel()
        channels.cancel()
        for keeper in keeping:
            keeper.cancel()
        await roster_channels.stop(butlers)
        for task, butler in zip(schedules, butlers, strict=True):
            await stop_schedules(task, butler)
        for butler in butlers:
            await butler.spawner.drain(0)
    for keeper in keeping:
        if keeper.done() and not keeper.cancelled() and keeper.exception() is not None:
            raise keeper.exception()  # type: ignore[misc]
    _raise_failures(servers, tasks)


#: How often a running butler looks whether its butler.toml changed.
CONFIG_CHECK_EVERY_S = 5.0


async def watch_configs(butlers: Sequence[ButlerContext]) -> None:
    """Say once per change that a butler's butler.toml changed and needs a restart."""
    warned: dict[str, str | None] = {b.config.name: b.config.source_digest for b in butlers}
    while True:
        await asyncio.sleep(CONFIG_CHECK_EVERY_S)
        for butler in butlers:
            config = butler.config
            now = await asyncio.to_thread(current_digest, config)
            if config.source_digest is None or now == warned[config.name]:
                continue
            warned[config.name] = now
            if now == config.source_digest:
                log.info("butler.toml is back as loaded", extra={"butler": config.name})
                continue
            log.warning(
                "butler.toml changed since start: restart the daemon to apply it "
                "(settings are read once)",
                extra={"butler": config.name, "path": str(config.config_dir / "butler.toml")},
            )


async def _serve(server: ButlerServer, sock: socket.socket) -> None:
    # Every line this server's task logs (uvicorn's included) names its butler.
    current_butler.set(server.butler.config.name)
    await server.serve(sockets=[sock])


def _raise_failures(servers: Sequence[ButlerServer], tasks: Sequence[asyncio.Task[None]]) -> None:
    for server, task in zip(servers, tasks, strict=True):
        if task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
        if not server.started:
            config = server.butler.config
            raise ButlerError(
                f"{config.name}: could not start serving on {config.butler.host}:"
                f"{config.butler.port}; see the log lines above"
            )


async def start_schedules(server: ButlerServer) -> None:
    """Start firing schedules, watching builders and waiting for the sessions taken
    back from workers once the server accepts.

    Sessions of each call back into the server, so none starts before it.
    """
    current_butler.set(server.butler.config.name)
    while not server.started:
        await asyncio.sleep(0.02)
    server.butler.spawner.follow_handed_over()  # sessions its workers hold, taken over
    server.butler.builders.start()
    await server.butler.notifier.start()  # held and retried messages go on
    if server.butler.scheduler is not None:
        try:
            await server.butler.scheduler.start()
        except Exception:
            log.exception("schedules could not start; the butler serves without them")


async def stop_schedules(starting: asyncio.Task[None], butler: ButlerContext) -> None:
    """Stop firing schedules (sessions they started were drained with the spawner's)."""
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    await butler.builders.stop()
    if butler.scheduler is not None:
        await butler.scheduler.stop()
    await butler.notifier.stop()


async def _announce(servers: Sequence[ButlerServer], started: float) -> None:
    while not all(s.started for s in servers):
        await asyncio.sleep(0.02)
    settle_for_serving()  # every butler built and warmed up: what serving needs is made
    startup_ms = int((time.monotonic() - started) * 1000)
    for server in servers:
        config = server.butler.config
        log.info(
            "butler serving",
            extra={
                "butler": config.name,
                "url": config.mcp_base_url,
                "mcp": f"{config.mcp_base_url}/mcp",
                "sse": f"{config.mcp_base_url}/sse",
                "startup_ms": startup_ms,
            },
        )
        _login_link(config)
        note_serving(config, config.butler.host, config.butler.port)


def _login_link(config: ButlerConfig) -> None:
    """The owner's way in, as Jupyter prints it: on a terminal only, never in a log line."""
    if sys.stderr.isatty():
        link = f"{config.mcp_base_url}/?token={owner_token(config)}"
        print(f"butler {config.name}: dashboard {link}", file=sys.stderr, flush=True)
    else:
        hint = f"butler token --config {config.config_dir}"
        log.info("dashboard login link", extra={"butler": config.name, "print_it_with": hint})
