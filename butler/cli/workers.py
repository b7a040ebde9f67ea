"""``butler workers``: the workers serving the roster's butlers, one line each.

The command only parses and prints; :mod:`butler.workers.registry` reads the rows.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from butler.cli.common import JsonOption, console, fail, names, run, sub_app
from butler.errors import UserError

app = sub_app()

WORKERS_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler workers --database-url postgresql://db.lan/butler\n\n"
    "  butler workers -r roster --only general --json\n\n"
    "One line per `butler worker` serving one of the roster's butlers: its host, the "
    "butlers it serves, how many sessions it runs at once for each, how many run now "
    "(as the job queue counts them) and when it last beat. [bold]lost[/bold] is a worker "
    "that missed three heartbeats (killed, its machine gone or cut off): its picked "
    "sessions are recorded failed by the next worker; [bold]incompatible[/bold] is one "
    "that speaks another hand-over than the daemons (another butler version): it is given "
    "no session (docs/scaling.md)."
)


@app.command(epilog=WORKERS_EPILOG)
def workers(
    roster: Annotated[
        Path, typer.Option("--roster", "-r", help="The roster folder (one sub-folder per butler).")
    ] = Path("roster"),
    only: Annotated[
        str | None,
        typer.Option("--only", help="Comma-separated butlers, e.g. general,health."),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url", help="The PostgreSQL the butlers and workers share (DATABASE_URL)."
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the workers serving the roster's butlers: host, load, heartbeat."""
    from butler.roster import load_roster
    from butler.store.workers import speaks
    from butler.workers.registry import roster_workers

    url = database_url or os.environ.get("DATABASE_URL") or ""
    try:
        configs = load_roster(roster, names(only), db_url=url or None)
    except UserError as exc:
        fail(str(exc))
    found = run(roster_workers(configs, url))
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    if not found:
        typer.echo("no workers: start one with `butler worker --help`")
        return
    table = Table(
        "worker", "host", "butlers", "version", "capacity", "running", "last heartbeat", "status"
    )
    for row in found:
        style = {"up": "green", "incompatible": "yellow"}.get(row["status"], "red")
        table.add_row(
            row["name"],
            row["host"],
            ", ".join(row["butlers"]),
            speaks(row["protocol"], row["version"]),
            str(row["capacity"]),
            str(row["running"]),
            f"{row['silent_s']:g} s ago",
            f"[{style}]{row['status']}[/{style}]",
        )
    console().print(table)
