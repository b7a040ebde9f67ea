"""The ``butler`` command line: one module per command group, assembled here.

Commands assemble and hand over; they hold no business logic. Each group
module imports only :mod:`butler.cli.common` and the core, never another
group, so the command line has no import cycle.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from butler import __version__
from butler.cli import (
    ask,
    builders,
    channels,
    contract,
    credentials,
    dashboard,
    notify,
    roster,
    run,
    token,
    worker,
)
from butler.cli.common import sub_app

app = sub_app(
    name="butler",
    help="Personal AI agent daemons: one MCP server per butler, locked-down agent sessions.",
)
for group in (
    run,
    ask,
    roster,
    dashboard,
    contract,
    builders,
    credentials,
    notify,
    channels,
    token,
    worker,
):
    app.add_typer(group.app)


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


def main() -> None:
    """Console entry point."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
