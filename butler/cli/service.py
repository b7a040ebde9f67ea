"""``butler service install|remove``: run the roster as a systemd service, checked first."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from butler.cli.common import fail, sub_app
from butler.errors import UserError

app = sub_app()
service_app = sub_app(
    help="Run the roster as a service: a systemd unit for butler up, checked first."
)
app.add_typer(service_app, name="service")

NameOption = Annotated[
    str, typer.Option("--name", help="The unit's name: butler, or butler-SOMETHING.")
]
SystemOption = Annotated[
    bool,
    typer.Option("--system", help="Root's unit in /etc/systemd/system, started at boot (as root)."),
]

INSTALL_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler service install\n\n"
    "  butler service install --roster ~/butlers --name butler-home\n\n"
    "  butler service install --print\n\n"
    "  sudo butler service install --system --roster /srv/butlers\n\n"
    "First checks that systemd's user manager answers (with --system, the system's): "
    "where none does, nothing is written and it says what works there. Writes "
    "~/.config/systemd/user/NAME.service running butler up for the roster as you run it "
    "(as root with --allow-root, with your BUTLER_DATA_DIR); keys (ANTHROPIC_API_KEY=..., "
    "DATABASE_URL=...) go in ~/.config/butler/service.env, created mode 0600, never in the "
    "unit. Then: systemctl --user daemon-reload && systemctl --user enable --now NAME; "
    "loginctl enable-linger to keep it running while you are logged out."
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
    system: SystemOption = False,
) -> None:
    """Write a systemd unit that runs butler up for the roster, once systemd answers here."""
    from butler import service

    command = Path(sys.argv[0]).resolve() if Path(sys.argv[0]).name == "butler" else None
    command = command or Path(sys.executable).with_name("butler")
    scope = service.Scope(system=system)
    try:
        if print_only:
            service.check_name(name)
            unit = service.unit_text(service.roster_folder(roster), command, name=name, scope=scope)
            typer.echo(unit, nl=False)
            return
        path = service.install(roster, name, command, scope)
    except UserError as exc:
        fail(str(exc))
    ctl, journal = scope.systemctl, "journalctl" + ("" if system else " --user")
    typer.echo(f"wrote {path}")
    typer.echo(f"keys and settings: {service.env_file()} (KEY=value lines, mode 0600)")
    typer.echo("start it now and at every " + ("boot:" if system else "login:"))
    typer.echo(f"  {ctl} daemon-reload && {ctl} enable --now {name}")
    typer.echo(f"  {journal} -u {name} -f      # its log")
    if not system:
        typer.echo("  loginctl enable-linger               # keep it running when you log out")


@service_app.command(
    epilog="[bold]Example[/bold]\n\n  butler service remove --name butler-home\n\n"
    "Stop it first: systemctl --user disable --now NAME."
)
def remove(name: NameOption = "butler", system: SystemOption = False) -> None:
    """Delete the unit butler service install wrote."""
    from butler import service

    scope = service.Scope(system=system)
    try:
        path = service.remove(name, scope)
    except UserError as exc:
        fail(str(exc))
    typer.echo(f"removed {path}; then: {scope.systemctl} daemon-reload")
