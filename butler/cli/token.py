"""``butler token``: print the owner token a butler's daemon and commands use, or rotate it."""

from __future__ import annotations

from typing import Annotated

import typer

from butler.cli.common import ConfigOption, address, fail, sub_app
from butler.errors import UserError
from butler.security.owner_token import owner_token, rotate_owner_token

app = sub_app()


@app.command(
    "token",
    epilog="[bold]Examples[/bold]\n\n  butler token --config roster/health\n\n"
    "  butler token --config roster/health --rotate\n\n"
    "The token is kept in the butler's data folder (mode 0600); BUTLER_TOKEN overrides it. "
    "--rotate replaces it: the running daemon takes the new one at once, and every "
    "browser login and login link made with the old one stops working.",
)
def token(
    config: ConfigOption = None,
    rotate: Annotated[
        bool, typer.Option("--rotate", help="Replace the token, ending every login made with it.")
    ] = False,
) -> None:
    """Print the butler's owner token: send it as 'Authorization: Bearer <token>'."""
    cfg = address(config)  # the name and URL only: no need to validate the whole folder
    try:
        value = rotate_owner_token(cfg) if rotate else owner_token(cfg)
    except UserError as exc:
        fail(str(exc))
    typer.echo(value)
    typer.echo(f"dashboard: {cfg.mcp_base_url}/?token={value}", err=True)
