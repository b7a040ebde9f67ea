"""``butler up`` and ``butler list``: the whole roster at once.

The commands only parse and hand over to :mod:`butler.roster`. A user's
mistake is one line on stderr and exit status 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

RosterOption = Annotated[
    Path,
    typer.Option(
        "--roster",
        "-r",
        help="The roster folder: one sub-folder per butler (shared/ is skipped).",
    ),
]

UP_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler up\n\n"
    "  butler up --roster roster --only health,general\n\n"
    "  butler up --database-url postgresql://localhost/butler\n\n"
    "Each butler serves on its own port with its own schema; all share one database "
    "(one embedded PostgreSQL when none is configured). SIGTERM or Ctrl-C drains every "
    "butler's running sessions, then stops them all."
)

LIST_EPILOG = (
    "[bold]Example[/bold]\n\n"
    "  butler list --roster roster\n\n"
    "Status is [bold]up[/bold] when the butler's /health answers, [bold]degraded[/bold] "
    "when its database does not, [bold]other[/bold] when a different server holds its port."
)


def _names(only: str | None) -> list[str]:
    return [name.strip() for name in (only or "").split(",") if name.strip()]


def register_roster(app: typer.Typer) -> None:
    """Add ``up`` and ``list`` to the ``butler`` command line."""
    from butler.cli import fail, run_async

    def load(roster: Path, only: str | None, database_url: str | None = None) -> list:
        from butler.errors import UserError
        from butler.roster import load_roster

        try:
            return load_roster(roster, _names(only), db_url=database_url)
        except UserError as exc:
            fail(str(exc))

    @app.command(epilog=UP_EPILOG)
    def up(
        roster: RosterOption = Path("roster"),
        only: Annotated[
            str | None,
            typer.Option("--only", help="Comma-separated butlers to start, e.g. health,general."),
        ] = None,
        database_url: Annotated[
            str | None,
            typer.Option(
                "--database-url",
                help="PostgreSQL URL for all (default DATABASE_URL, else embedded)",
            ),
        ] = None,
        log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    ) -> None:
        """Run every butler of the roster in this one process."""
        from butler.logs import setup_logging
        from butler.roster import up as run_roster

        if log_level.lower() not in ("debug", "info", "warning", "error"):
            fail(f"--log-level: expected debug, info, warning or error, found {log_level!r}")
        configs = load(roster, only, database_url)
        setup_logging(log_level)
        run_async(run_roster(configs))

    @app.command("list", epilog=LIST_EPILOG)
    def list_butlers(roster: RosterOption = Path("roster")) -> None:
        """Show the roster's butlers: port, runtime, schedules and whether each is up."""
        from rich.console import Console
        from rich.table import Table

        from butler.roster import statuses

        found = run_async(statuses(load(roster, None)))
        table = Table("butler", "port", "runtime", "schedules", "status")
        colour = {"up": "green", "down": "red"}
        for row in found:  # type: ignore[attr-defined]
            style = colour.get(row.status, "yellow")
            table.add_row(
                row.name,
                str(row.port),
                row.runtime,
                str(row.schedules),
                f"[{style}]{row.status}[/{style}]",
            )
        Console().print(table)
