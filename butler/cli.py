"""The ``butler`` command line.

Commands assemble and hand over; they hold no business logic. A user's
mistake is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from butler import __version__
from butler.errors import ButlerError, UserError

app = typer.Typer(
    name="butler",
    help="Personal AI agent daemons: one MCP server per butler, locked-down agent sessions.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
db_app = typer.Typer(help="Database commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")

ConfigOption = Annotated[
    Path,
    typer.Option(
        "--config",
        "-c",
        help="The butler's folder (holding butler.toml and CLAUDE.md), e.g. roster/health.",
        show_default=False,
    ),
]


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one error line and exit."""
    typer.echo(f"butler: error: {message}", err=True)
    raise typer.Exit(code)


def run_async(coro: object) -> object:
    """Run a coroutine; turn butler's errors into one line and an exit status."""
    try:
        return asyncio.run(coro)  # type: ignore[arg-type]
    except UserError as exc:
        fail(str(exc), 2)
    except ButlerError as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def load(config_dir: Path, **overrides: object):
    from butler.config import load_config

    try:
        return load_config(config_dir, **overrides)
    except UserError as exc:
        fail(str(exc))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"butler {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Personal AI agent daemons."""


@app.command(
    epilog="[bold]Examples[/bold]\n\n"
    "  butler run --config roster/health\n\n"
    "  butler run -c roster/health --port 8201\n\n"
    "  DATABASE_URL=postgresql://localhost/butler butler run -c roster/health\n\n"
    "With no database configured, an embedded PostgreSQL is started; its data is kept in "
    "BUTLER_DATA_DIR, else the user's data folder (/var/lib/butler for root).",
)
def run(
    config: ConfigOption,
    port: Annotated[
        int | None, typer.Option(help="Port to serve on (overrides butler.toml).")
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url", help="PostgreSQL URL (default DATABASE_URL, else embedded)."
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Run one butler daemon: MCP at /mcp (streamable HTTP) and /sse, health at /health."""
    from butler.daemon import serve
    from butler.logs import setup_logging

    if log_level.lower() not in ("debug", "info", "warning", "error"):
        fail(f"--log-level: expected debug, info, warning or error, found {log_level!r}")
    cfg = load(config, port=port, db_url=database_url)
    setup_logging(log_level)
    run_async(serve(cfg))


@db_app.command(
    "migrate",
    epilog="[bold]Example[/bold]\n\n  butler db migrate --config roster/health",
)
def db_migrate(
    config: ConfigOption,
    database_url: Annotated[
        str | None, typer.Option("--database-url", help="PostgreSQL URL (default: as `run`).")
    ] = None,
) -> None:
    """Apply the pending migrations to the butler's schema and exit."""
    from butler.daemon import open_database

    cfg = load(config, db_url=database_url)

    async def go() -> None:
        opened = await open_database(cfg)
        try:
            total = await opened.db.fetchval("SELECT count(*) FROM butler_migrations")
        finally:
            await opened.close()
        for migration in opened.applied:
            typer.echo(f"applied {migration.path.name}")
        now = f"{len(opened.applied)} applied now" if opened.applied else "up to date"
        typer.echo(f"schema {cfg.db_schema}: {now}, {total} migrations in all")

    run_async(go())


from butler.cli_ask import register_ask  # noqa: E402

register_ask(app)

from butler.cli_roster import register_roster  # noqa: E402

register_roster(app)

from butler.cli_adapter import register_adapter  # noqa: E402

register_adapter(app)

from butler.cli_spawn import register_spawn  # noqa: E402

register_spawn(app)

from butler.cli_token import register_token  # noqa: E402

register_token(app)


def main() -> None:
    """Console entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
