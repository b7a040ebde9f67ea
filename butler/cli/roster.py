"""``butler up`` and ``butler list``: the whole roster at once.

The commands only parse and hand over to :mod:`butler.roster`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from butler.cli.common import (
    AllowRootOption,
    LogFormatOption,
    LogLevelOption,
    check_log_format,
    check_log_level,
    console,
    fail,
    names,
    refuse_a_second_start,
    refuse_root,
    run,
    serve,
    sub_app,
)
from butler.errors import UserError

if TYPE_CHECKING:
    from butler.config import ButlerConfig
    from butler.glance import Glance

app = sub_app()

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
    "(one embedded PostgreSQL when none is configured). SIGTERM, Ctrl-C or "
    "butler stop --roster DIR drains every butler's running sessions, then stops them all."
)

LIST_EPILOG = (
    "[bold]Example[/bold]\n\n"
    "  butler list --roster roster\n\n"
    "Status is [bold]up[/bold] when the butler's /health answers, [bold]degraded[/bold] "
    "when its database does not, [bold]other[/bold] when a different server holds its port."
)


def load_roster(roster: Path, only: str | None, database_url: str | None = None) -> list:
    """The roster's butlers; a mistake in any is one line and exit 2."""
    from butler.roster_folders import load_roster as load_all

    try:
        return load_all(roster, names(only), db_url=database_url)
    except UserError as exc:
        fail(str(exc))


def plain_butlers(roster: Path, only: str | None) -> list[Glance]:
    """The roster's butlers read plainly (cheap): those whose folder is clear."""
    from butler.glance import glance
    from butler.roster_folders import butler_folders

    try:
        found = [glance(folder) for folder in butler_folders(roster)]
    except UserError:
        return []  # the full load says what is wrong
    chosen = names(only)
    return [g for g in found if g is not None and (not chosen or g.name in chosen)]


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
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = "auto",
    allow_root: AllowRootOption = False,
) -> None:
    """Run every butler of the roster in this one process."""
    refuse_root(allow_root)
    check_log_level(log_level)
    check_log_format(log_format)
    refuse_a_second_start(plain_butlers(roster, only), "up", roster)
    from butler.logs import setup_logging  # imports rich: only once nothing refused the start

    configs: list[ButlerConfig] = load_roster(roster, only, database_url)
    setup_logging(log_level, log_format)  # type: ignore[arg-type]
    serve(configs, "up", roster)


@app.command("list", epilog=LIST_EPILOG)
def list_butlers(roster: RosterOption = Path("roster")) -> None:
    """Show the roster's butlers: port, runtime, schedules and whether each is up."""
    from butler.roster_folders import glance_each
    from butler.roster_status import statuses

    try:
        loaded = glance_each(roster)
    except UserError as exc:
        fail(str(exc))
    butlers = [c for c in loaded if not isinstance(c, Exception)]
    broken = [c for c in loaded if isinstance(c, Exception)]
    if not loaded:
        fail(f"{roster}: no butler folders (sub-folders holding butler.toml)")
    found = run(statuses(butlers))
    from rich.table import Table

    table = Table("butler", "port", "runtime", "schedules", "status", "channels")
    colour = {"up": "green", "down": "red"}
    for row in found:
        style = colour.get(row.status, "yellow")
        status = f"[{style}]{row.status}[/{style}]"
        table.add_row(
            row.name, str(row.port), row.runtime, str(row.schedules), status, row.channels
        )
    for error in broken:
        table.add_row(_folder_of(error), "-", "-", "-", "[red]invalid[/red]", "-")
    console().print(table)
    # One bad folder does not hide the others; what is wrong with it comes after.
    for error in broken:
        typer.echo(f"butler: error: {error}", err=True)
    if broken:
        raise typer.Exit(2)


def _folder_of(error: Exception) -> str:
    """The butler folder an error's message starts with (``roster/x/butler.toml: ...``)."""
    where = Path(str(error).split(":", 1)[0])
    return where.parent.name if where.name == "butler.toml" else where.name
