"""``butler worker``: run the sessions of some of the roster's butlers on this machine.

The command only parses and hands over to :mod:`butler.workers.worker`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

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

app = sub_app()

WORKER_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler worker --roster roster --database-url postgresql://db.lan/butler\n\n"
    "  butler worker -r roster --only general,health --database-url postgresql://db.lan/butler\n\n"
    "  butler worker -r roster --capacity 4 --database-url postgresql://db.lan/butler\n\n"
    "  butler worker -r roster --heartbeat-timeout 120 --database-url postgresql://db.lan/butler"
    "\n\n"
    'Serves butlers whose \\[butler.runtime] workers = "remote" or "any", from a copy of '
    "their folders: each one's sessions run here, in this machine's jail, and call back to "
    "the butler's daemon at its \\[butler] public_url (else its host and port). A butler it "
    "cannot reach is named in one line and gets none of its sessions. It shows in `butler "
    "workers` while it runs. SIGTERM lets running sessions finish first."
)


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
    setup_logging(log_level, log_format)  # type: ignore[arg-type]
    run(serve(configs, url, WorkerSettings(**given)), signals=True)


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
