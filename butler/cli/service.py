"""``butler service install|remove``: run the roster as a systemd user service."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from butler.cli.common import fail, sub_app
from butler.errors import UserError

app = sub_app()
service_app = sub_app(
    help="Run the roster as a service of your user: a systemd user unit for butler up."
)
app.add_typer(service_app, name="service")

NameOption = Annotated[
    str, typer.Option("--name", help="The unit's name: butler, or butler-SOMETHING.")
]

INSTALL_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler service install\n\n"
    "  butler service install --roster ~/butlers --name butler-home\n\n"
    "  butler service install --print\n\n"
    "Writes ~/.config/systemd/user/NAME.service running butler up for the roster; keys "
    "(ANTHROPIC_API_KEY=..., DATABASE_URL=...) go in ~/.config/butler/service.env (mode "
    "0600), never in the unit. Then: systemctl --user daemon-reload && systemctl --user "
    "enable --now NAME; loginctl enable-linger to keep it running while you are logged out."
)


@service_app.command(epilog=INSTALL_EPILOG)
def install(
    roster: Annotated[
        Path, typer.Option("--roster", "-r", help="The roster folder butler up serves.")
    ] = Path("roster"),
    name: NameOption = "butler",
    print_only: Annotated[
        bool, typer.Option("--print", help="Print the unit instead of writing it.")
    ] = False,
) -> None:
    """Write a systemd user unit that runs butler up for the roster."""
    from butler import service

    command = Path(sys.argv[0]).resolve() if Path(sys.argv[0]).name == "butler" else None
    command = command or Path(sys.executable).with_name("butler")
    if print_only:
        typer.echo(service.unit_text(roster.expanduser().resolve(), command), nl=False)
        return
    try:
        path = service.install(roster, name, command)
    except UserError as exc:
        fail(str(exc))
    typer.echo(f"wrote {path}")
    typer.echo(f"keys and settings: {service.env_file()} (KEY=value lines, chmod 600)")
    typer.echo("start it now and at every login:")
    typer.echo(f"  systemctl --user daemon-reload && systemctl --user enable --now {name}")
    typer.echo(f"  journalctl --user -u {name} -f      # its log")
    typer.echo("  loginctl enable-linger               # keep it running when you log out")


@service_app.command(
    epilog="[bold]Example[/bold]\n\n  butler service remove --name butler-home\n\n"
    "Stop it first: systemctl --user disable --now NAME."
)
def remove(name: NameOption = "butler") -> None:
    """Delete the unit butler service install wrote."""
    from butler import service

    try:
        path = service.remove(name)
    except UserError as exc:
        fail(str(exc))
    typer.echo(f"removed {path}; then: systemctl --user daemon-reload")
