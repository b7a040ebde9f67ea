"""``butler run`` and ``butler db migrate``: one butler, from its folder.

The daemon's modules (uvicorn, FastMCP, asyncpg) are imported when a command
runs, not when the command line is parsed, so ``butler --help`` and
``--version`` answer in a tenth of a second.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from butler.cli.common import (
    AllowRootOption,
    ConfigOption,
    DatabaseUrlOption,
    LogFormatOption,
    LogLevelOption,
    butler_folder,
    check_log_format,
    check_log_level,
    load,
    refuse_a_second_start,
    refuse_root,
    run,
    serve,
    sub_app,
)

app = sub_app()
db_app = sub_app(help="Database commands.")
app.add_typer(db_app, name="db")

RUN_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler run --config roster/health\n\n"
    "  butler run -c roster/health --port 8201\n\n"
    "  cd roster/health && butler run\n\n"
    "  DATABASE_URL=postgresql://localhost/butler butler run -c roster/health\n\n"
    "With no database configured, an embedded PostgreSQL is started; its data is kept in "
    "BUTLER_DATA_DIR, else the user's data folder (~/.local/share/butler). "
    "Stop it with Ctrl-C or butler stop -c DIR; butler restart -c DIR starts it again."
)


@app.command("run", epilog=RUN_EPILOG)
def run_butler(
    config: ConfigOption = None,
    port: Annotated[
        int | None, typer.Option(help="Port to serve on (overrides butler.toml).")
    ] = None,
    database_url: DatabaseUrlOption = None,
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = "auto",
    allow_root: AllowRootOption = False,
) -> None:
    """Run one butler daemon: MCP at /mcp (streamable HTTP) and /sse, health at /health."""
    from butler.glance import glance

    refuse_root(allow_root)
    check_log_level(log_level)
    check_log_format(log_format)
    plain = glance(butler_folder(config))
    if plain is not None:  # else the load below names what is unclear
        refuse_a_second_start([replace(plain, port=port or plain.port)], "run")
    from butler.logs import setup_logging  # imports rich: only once nothing refused the start

    cfg = load(config, port=port, db_url=database_url)
    setup_logging(log_level, log_format)  # type: ignore[arg-type]
    serve([cfg], "run")


@db_app.command(
    "migrate", epilog="[bold]Example[/bold]\n\n  butler db migrate --config roster/health"
)
def db_migrate(
    config: ConfigOption = None,
    database_url: Annotated[
        str | None, typer.Option("--database-url", help="PostgreSQL URL (default: as `run`).")
    ] = None,
) -> None:
    """Apply the pending migrations to the butler's schema and exit."""
    from butler.store.opening import open_store

    cfg = load(config, db_url=database_url)

    async def go() -> None:
        opened = await open_store(cfg.glance())
        try:
            total = await opened.db.fetchval("SELECT count(*) FROM butler_migrations")
        finally:
            await opened.close()
        for migration in opened.applied:
            typer.echo(f"applied {migration.path.name}")
        now = f"{len(opened.applied)} applied now" if opened.applied else "up to date"
        typer.echo(f"schema {cfg.db_schema}: {now}, {total} migrations in all")

    run(go())
