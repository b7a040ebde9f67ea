"""``butler dashboard --roster DIR``: one page for a roster of separately started butlers.

The command only parses and hands over to :mod:`butler.dashboard.standalone`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from butler.cli.common import (
    LogFormatOption,
    LogLevelOption,
    check_log_format,
    check_log_level,
    fail,
    sub_app,
)
from butler.config import ButlerConfig
from butler.errors import UserError

app = sub_app()

EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler dashboard --roster roster\n\n"
    "  butler dashboard --roster roster --port 8090\n\n"
    "For butlers started one by one (`butler run`); `butler up` serves the same page at "
    "/roster on every butler. Each butler's address and owner token are read from its data "
    "folder. The page has its own owner token (BUTLER_TOKEN overrides it); on a terminal its "
    "login link is printed."
)


@app.command("dashboard", epilog=EPILOG)
def dashboard(
    roster: Annotated[
        Path, typer.Option("--roster", "-r", help="The roster folder: one sub-folder per butler.")
    ] = Path("roster"),
    port: Annotated[int, typer.Option(help="Port to serve the page on.", min=1, max=65535)] = 8099,
    host: Annotated[str, typer.Option(help="Address to serve on.")] = "127.0.0.1",
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = "auto",
) -> None:
    """Serve one page listing every butler of the roster: today's sessions, spend, what is next."""
    import uvicorn

    from butler.dashboard.standalone import build_roster_app, dashboard_owner
    from butler.logs import setup_logging
    from butler.roster_folders import load_each
    from butler.security.owner_token import owner_token

    check_log_level(log_level)
    check_log_format(log_format)
    try:
        loaded = load_each(roster)
        token = owner_token(dashboard_owner(roster))
    except UserError as exc:
        fail(str(exc))
    configs = [c for c in loaded if isinstance(c, ButlerConfig)]
    for error in (c for c in loaded if not isinstance(c, ButlerConfig)):
        typer.echo(f"butler: warning: skipped: {error}", err=True)
    if not configs:
        fail(f"{roster}: no butler folders (sub-folders holding butler.toml)")
    setup_logging(log_level, log_format)  # type: ignore[arg-type]
    if sys.stderr.isatty():
        typer.echo(f"roster dashboard http://{host}:{port}/?token={token}", err=True)
    app_ = build_roster_app(configs, port)
    uvicorn.run(app_, host=host, port=port, log_config=None, ws="none")
