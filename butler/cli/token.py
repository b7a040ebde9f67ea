"""``butler token``: print the owner token a butler's daemon and commands use."""

from __future__ import annotations

import typer

from butler.cli.common import ConfigOption, fail, load, sub_app
from butler.errors import UserError
from butler.security.owner_token import owner_token

app = sub_app()


@app.command(
    "token",
    epilog="[bold]Example[/bold]\n\n  butler token --config roster/health\n\n"
    "The token is kept in the butler's data folder (mode 0600); BUTLER_TOKEN overrides it.",
)
def token(config: ConfigOption) -> None:
    """Print the butler's owner token: send it as 'Authorization: Bearer <token>'."""
    cfg = load(config)
    try:
        value = owner_token(cfg.name)
    except UserError as exc:
        fail(str(exc))
    typer.echo(value)
    typer.echo(f"dashboard: {cfg.mcp_base_url}/?token={value}", err=True)
