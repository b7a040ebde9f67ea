"""``butler token``: print the owner token a butler's daemon and commands use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConfigOption = Annotated[
    Path,
    typer.Option("--config", "-c", help="The butler's folder, e.g. roster/health."),
]


def token(config: ConfigOption) -> None:
    """Print the butler's owner token: send it as 'Authorization: Bearer <token>'."""
    from butler.cli import fail, load
    from butler.errors import UserError
    from butler.security.owner_token import owner_token

    cfg = load(config)
    try:
        value = owner_token(cfg.name)
    except UserError as exc:
        fail(str(exc))
    typer.echo(value)
    typer.echo(f"dashboard: {cfg.mcp_base_url}/?token={value}", err=True)


def register_token(app: typer.Typer) -> None:
    """Add ``butler token`` to ``app``."""
    app.command(
        "token",
        epilog="[bold]Example[/bold]\n\n  butler token --config roster/health\n\n"
        "The token is kept in the butler's data folder (mode 0600); BUTLER_TOKEN overrides it.",
    )(token)
