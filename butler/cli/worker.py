"""``butler worker``: run the sessions of some of the roster's butlers on this machine.

The command only parses and hands over to :mod:`butler.workers.worker`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from butler.cli.common import (
    LogFormatOption,
    LogLevelOption,
    check_log_format,
    check_log_level,
    fail,
    names,
    run,
    sub_app,
)
from butler.errors import UserError

if TYPE_CHECKING:
    from butler.config import ButlerConfig

app = sub_app()

WORKER_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler worker --roster roster --database-url postgresql://db.lan/butler\n\n"
    "  butler worker -r roster --only general,health --database-url postgresql://db.lan/butler\n\n"
    "  butler worker -r roster --capacity 4 --database-url postgresql://db.lan/butler\n\n"
    "  butler worker -r roster --heartbeat-timeout 120 --database-url postgresql://db.lan/butler"
    "\n\n"
    "  butler worker -r roster --init-role worker_gpu1 --database-url postgresql://admin@db.lan/butler"
    "\n\n"
    'Serves butlers whose \\[butler.runtime] workers = "remote" or "any", from a copy of '
    "their folders: each one's sessions run here, in this machine's jail, and call back to "
    "the butler's daemon at its \\[butler] public_url (else its host and port). A butler it "
    "cannot reach is named in one line and gets none of its sessions. It shows in `butler "
    "workers` while it runs. SIGTERM lets running sessions finish first.\n\n"
    "--init-role NAME, run once with the daemons' database URL, makes the worker a database "
    "role of its own and prints the URL to start it with: that role reaches only the "
    "butlers' job queues, never their sessions, state or credentials (docs/scaling.md)."
)


#: ``--init-role NAME``: the worker's own database role (butler/workers/role.py).
InitRoleOption = Annotated[
    str | None,
    typer.Option(
        "--init-role",
        metavar="NAME",
        help="Make the database role NAME for a worker (with the daemons' URL), print "
        "the URL to run the worker with, and exit.",
    ),
]


@app.command(epilog=WORKER_EPILOG)
def worker(
    roster: Annotated[
        Path,
        typer.Option("--roster", "-r", help="The roster folder (a copy of the daemon's)."),
    ] = Path("roster"),
    only: Annotated[
        str | None,
        typer.Option("--only", help="Comma-separated butlers to serve, e.g. general,health."),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url", help="The PostgreSQL the butlers' daemons use (default DATABASE_URL)."
        ),
    ] = None,
    capacity: Annotated[
        int | None,
        typer.Option(
            "--capacity",
            help="Sessions run at once for each butler (at least 2; default: the CPU count).",
        ),
    ] = None,
    heartbeat_timeout: Annotated[
        float | None,
        typer.Option(
            "--heartbeat-timeout",
            help="Seconds without a heartbeat after which a session's worker counts as "
            "stopped (its session is recorded failed, never run again; default 60).",
        ),
    ] = None,
    poll: Annotated[
        float | None,
        typer.Option(
            "--poll",
            help="Seconds between looks at the queue when no notification came (default 30).",
        ),
    ] = None,
    init_role: InitRoleOption = None,
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = "auto",
) -> None:
    """Run the sessions the roster's daemons hand to workers, on this machine."""
    from butler.logs import setup_logging
    from butler.roster import load_roster
    from butler.workers.worker import WorkerSettings, serve

    check_log_level(log_level)
    given = _settings(capacity, heartbeat_timeout, poll)
    check_log_format(log_format)
    url = database_url or os.environ.get("DATABASE_URL") or ""
    try:
        configs = load_roster(roster, names(only), db_url=url or None)
    except UserError as exc:
        fail(str(exc))
    if init_role is not None:
        return _init_role(configs, url, init_role)
    setup_logging(log_level, log_format)  # type: ignore[arg-type]
    run(serve(configs, url, WorkerSettings(**given)), signals=True)


def _init_role(configs: list[ButlerConfig], url: str, name: str) -> None:
    """``--init-role NAME``: make the role, print the URL to run the worker with."""
    from butler.workers.role import make_role

    typer.echo(run(make_role(configs, url, name)))


def _settings(
    capacity: int | None, heartbeat_timeout: float | None, poll: float | None
) -> dict[str, float]:
    """The worker's settings the command line gives, checked (one line for a mistake)."""
    if capacity is not None and not 2 <= capacity <= 256:
        fail(
            f"--capacity: expected 2 to 256 sessions at once, found {capacity} (the job queue "
            "takes one session at a time and wants room for two)"
        )
    for name, seconds in (("--heartbeat-timeout", heartbeat_timeout), ("--poll", poll)):
        if seconds is not None and not 1 <= seconds <= 86400:
            fail(f"{name}: expected 1 to 86400 seconds, found {seconds:g}")
    given = {"capacity": capacity, "heartbeat_timeout_s": heartbeat_timeout, "poll_s": poll}
    return {name: value for name, value in given.items() if value is not None}
