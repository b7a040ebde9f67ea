"""``butler stop`` and ``butler restart``: a butler's daemon, or what serves a roster.

The daemon is found by the note it leaves in each butler's data folder
(:mod:`butler.daemons`), whether ``butler run``, ``butler up`` or a service
unit started it. Stopping is SIGTERM, as Ctrl-C: the daemon drains its
running sessions before it exits.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from butler.cli.common import ConfigOption, address, fail, sub_app, waiting
from butler.errors import UserError

if TYPE_CHECKING:
    from butler.daemons import Daemon
    from butler.glance import Glance

app = sub_app()

RosterOption = Annotated[
    Path | None,
    typer.Option(
        "--roster",
        "-r",
        help="A roster folder: what serves any of its butlers (butler up, or butler run each).",
        show_default=False,
    ),
]

STOP_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler stop -c roster/health\n\n"
    "  butler stop --roster roster        (the butler up serving it)\n\n"
    "  cd roster/health && butler stop\n\n"
    "As Ctrl-C in the daemon's terminal: running sessions drain first (up to 30 s; those "
    "still running are recorded cancelled). A builder is stopped with "
    "butler builders stop ID."
)
RESTART_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler restart -c roster/health\n\n"
    "  butler restart --roster roster\n\n"
    "The daemon stops as with butler stop, then starts again in the same process: the "
    "same command line, environment and terminal (or service unit), butler.toml read anew."
)


@app.command(epilog=STOP_EPILOG)
def stop(config: ConfigOption = None, roster: RosterOption = None) -> None:
    """Stop a butler's daemon (or butler up's roster): its sessions drain first."""
    from butler import daemons

    targets = {butler.name: butler for butler in _targets(config, roster)}
    found = _served(list(targets.values()), named=roster is None)
    if not found:
        typer.echo(_not_running(config, roster))
        return
    found = _once_serving(found, targets)
    for daemon, names in found:
        _signal(daemon, names)
    gone = lambda: not any(d.alive() for d, _ in found)  # noqa: E731
    with waiting(f"stopping {_names(found)}: its running sessions drain first…"):
        daemons.wait_until(gone, daemons.STOP_WAIT_S)
    for daemon, names in found:
        if daemon.alive():
            fail(
                f"{', '.join(names)} (pid {daemon.pid}) is still stopping after "
                f"{daemons.STOP_WAIT_S:.0f} s; kill -9 {daemon.pid} ends it at once (its open "
                "sessions are recorded failed at the next start)",
                1,
            )
        typer.echo(f"stopped {', '.join(names)} (pid {daemon.pid})")


@app.command(epilog=RESTART_EPILOG)
def restart(config: ConfigOption = None, roster: RosterOption = None) -> None:
    """Stop a butler's daemon and start it again as it was started."""
    from butler import daemons

    targets = {butler.name: butler for butler in _targets(config, roster)}
    found = _served(list(targets.values()), named=roster is None)
    if not found:
        how = f"butler up --roster {roster}" if roster else f"butler run -c {config or '.'}"
        fail(f"{_not_running(config, roster)}; start it with: {how}")
    found = _once_serving(found, targets)
    asked = time.time()
    for daemon, names in found:
        daemons.request_restart(targets[names[0]], daemon)
        _signal(daemon, names)

    def again(daemon: Daemon, names: list[str]) -> Daemon | None:
        return daemons.served_again(targets[names[0]], daemon, asked)

    settled = lambda: all(again(d, n) or not d.alive() for d, n in found)  # noqa: E731
    with waiting(f"restarting {_names(found)}: its running sessions drain first…"):
        daemons.wait_until(settled, daemons.STOP_WAIT_S + daemons.START_WAIT_S)
    for daemon, names in found:
        now = again(daemon, names)
        if now is None:
            state = "stopped and did not start again" if not daemon.alive() else "is not back yet"
            fail(f"{', '.join(names)} (pid {daemon.pid}) {state}; see its log", 1)
        typer.echo(f"restarted {', '.join(names)} (pid {now.pid}): serving {now.url}")


def _targets(config: Path | None, roster: Path | None) -> list[Glance]:
    """The butlers named: ``--roster``'s folders, else ``-c`` (or the current folder)."""
    if roster is None:
        return [address(config)]
    if config is not None:
        fail("give either -c DIR (one butler) or --roster DIR (a roster), not both")
    from butler.roster_folders import glance_each

    try:
        found = [g for g in glance_each(roster) if not isinstance(g, Exception)]
    except UserError as exc:
        fail(str(exc))
    if not found:
        fail(f"{roster}: no butler folders (sub-folders holding butler.toml)")
    return found


#: The live daemons serving the butlers named, each with the names of those it serves.
Served = list[tuple["Daemon", list[str]]]


def _served(targets: list[Glance], named: bool) -> Served:
    """The daemons serving ``targets``; one named alone (``named``) must be served alone."""
    from butler.daemons import daemon_of

    by_process: dict[str, tuple[Daemon, list[str]]] = {}
    for butler in targets:
        daemon = daemon_of(butler)
        if daemon is not None:
            by_process.setdefault(daemon.process, (daemon, []))[1].append(butler.name)
    found = list(by_process.values())
    if named:
        for daemon, names in found:
            others = [b for b in daemon.butlers if b not in names]
            if daemon.command == "up" and others:
                # One process serves them all: stopping it stops the others too.
                fail(
                    f"{names[0]} is served by butler up (pid {daemon.pid}) with "
                    f"{', '.join(others)}; stop them all with: {daemon.stop_command(None)}"
                )
    return found


def _once_serving(found: Served, targets: dict[str, Glance]) -> Served:
    """``found``, each daemon waited for until it serves: a signal in its start would kill it
    before it could drain, with its database half-open."""
    from butler import daemons

    def now(daemon: Daemon, names: list[str]) -> Daemon | None:
        return daemons.daemon_of(targets[names[0]])

    starting = [(d, n) for d, n in found if d.state != "serving"]
    if not starting:
        return found

    def ready() -> bool:
        return all((now(d, n) or d).state == "serving" or not d.alive() for d, n in starting)

    with waiting(f"{_names(starting)}: waiting for its start to finish…"):
        daemons.wait_until(ready, daemons.START_WAIT_S)
    return [(now(d, n) or d, n) for d, n in found]


def _signal(daemon: Daemon, names: list[str]) -> None:
    from butler.daemons import signal_daemon

    try:
        signal_daemon(daemon, ", ".join(names))
    except UserError as exc:
        fail(str(exc))


def _not_running(config: Path | None, roster: Path | None) -> str:
    if roster is not None:
        return f"no butler of {roster} is running"
    return f"{address(config).name} is not running"


def _names(found: Served) -> str:
    return ", ".join(name for _, names in found for name in names)
