"""``butler credentials``: the keys a butler's runtimes get, kept in its database.

A value is read from a hidden prompt or standard input, never from the
command line (where other users' ``ps`` would show it), and is never printed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from butler.cli.common import ConfigOption, console, fail, glance_at, run, sub_app

if TYPE_CHECKING:
    from butler.glance import Glance
    from butler.store.credentials import CredentialStore

T = TypeVar("T")

app = sub_app()
credentials_app = sub_app(
    help="Keys for the butler's runtimes (e.g. ANTHROPIC_API_KEY), kept in its database."
)
app.add_typer(credentials_app, name="credentials")

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
#: Longer than any API key or token; a bigger value is a pasted file, not a key.
MAX_VALUE = 16 * 1024

Name = Annotated[
    str, typer.Argument(help="The variable the runtime reads, e.g. ANTHROPIC_API_KEY.")
]


def check_name(name: str) -> str:
    """NAME as given, or one line saying what a name may be."""
    if not NAME.fullmatch(name):
        fail(
            f"NAME: expected an environment variable name (letters, digits, _; at most 128), "
            f"found {name[:40]!r}"
        )
    return name


def read_value(name: str) -> str:
    """The value from a hidden prompt on a terminal, else all of standard input."""
    if sys.stdin.isatty():
        value = typer.prompt(f"{name}", hide_input=True, confirmation_prompt=True)
    else:
        value = sys.stdin.read(MAX_VALUE + 1).rstrip("\r\n")
    if len(value) > MAX_VALUE:
        fail(f"{name}: the value is over {MAX_VALUE} bytes; expected a key or token")
    if not value:
        fail(f"{name}: the value is empty; pipe it in or type it at the prompt")
    return value


def where(config_dir: Path | None) -> Glance:
    """The butler's name and where its data is: all the credentials commands read of its folder."""
    return glance_at(config_dir, "db_url", "db_schema")


def with_store(butler: Glance, work: Callable[[CredentialStore], Awaitable[T]]) -> T:
    """Open the butler's database, run ``work`` on its credentials, close it."""
    from butler.store.credentials import CredentialStore
    from butler.store.opening import open_store

    async def go() -> T:
        opened = await open_store(butler)
        try:
            return await work(CredentialStore(opened.db))
        finally:
            await opened.close()

    return run(go())


@credentials_app.command(
    "set",
    epilog="[bold]Examples[/bold]\n\n"
    "  butler credentials set ANTHROPIC_API_KEY -c roster/general\n\n"
    "  pass show anthropic | butler credentials set ANTHROPIC_API_KEY -c roster/general",
)
def set_credential(name: Name, config: ConfigOption = None) -> None:
    """Store NAME's value, read from a hidden prompt or standard input (never an argument)."""
    check_name(name)
    cfg = where(config)
    value = read_value(name)
    with_store(cfg, lambda store: store.set(name, value))
    typer.echo(f"set {name} for {cfg.name}")


@credentials_app.command(
    "list", epilog="[bold]Example[/bold]\n\n  butler credentials list -c roster/general"
)
def list_credentials(config: ConfigOption = None) -> None:
    """Show the stored names and when each was set; never the values."""
    cfg = where(config)
    found = with_store(cfg, lambda store: store.names())
    if not found:
        typer.echo(f"no credentials stored for {cfg.name}; add one with butler credentials set")
        return
    from rich.table import Table

    table = Table("name", "set at")
    for name, updated in found:
        table.add_row(name, updated.strftime("%Y-%m-%d %H:%M:%S %Z"))
    console().print(table)


@credentials_app.command(
    "delete",
    epilog="[bold]Example[/bold]\n\n"
    "  butler credentials delete ANTHROPIC_API_KEY -c roster/general",
)
def delete_credential(name: Name, config: ConfigOption = None) -> None:
    """Forget NAME's stored value (the environment's, if any, applies again)."""
    check_name(name)
    cfg = where(config)
    if not with_store(cfg, lambda store: store.delete(name)):
        fail(f"{name}: no such credential for {cfg.name}; see butler credentials list")
    typer.echo(f"deleted {name} for {cfg.name}")
