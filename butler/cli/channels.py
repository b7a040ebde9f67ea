"""``butler channels``: who may talk to a butler from Telegram, Matrix, email, Slack or Discord.

``--config`` is a butler folder (its own channels, or the switchboard's when
it is the switchboard's home) or a roster folder (its switchboard). The
commands write the keeping butler's database directly: the daemon need not
run, and sees a pairing at the sender's next message.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.table import Table

from butler.cli.common import DatabaseUrlOption, console, fail, run, sub_app
from butler.config import ButlerConfig
from butler.errors import UserError

T = TypeVar("T")

app = sub_app()
channels_app = sub_app(help="Pair the people who may talk to your butlers from chat apps.")
app.add_typer(channels_app, name="channels")

KINDS = ("telegram", "matrix", "email", "slack", "discord")

FolderOption = Annotated[
    Path,
    typer.Option(
        "--config",
        "-c",
        help="A butler folder (e.g. roster/health) or a roster folder with switchboard.toml.",
        show_default=False,
    ),
]
Kind = Annotated[
    str, typer.Argument(help="telegram, matrix, email, slack or discord.", show_default=False)
]

PAIR_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler channels pair telegram --config roster\n\n"
    "  butler channels pair email -c roster/health --minutes 30\n\n"
    "Prints a one-time code on stdout. Send it to the bot (or the butler's address) "
    "from the account you will talk from; that sender is paired. The code works once "
    "and expires after --minutes."
)


def keeper(folder: Path, kind: str, db_url: str | None) -> ButlerConfig:
    """The butler that keeps ``kind``'s pairings; a mistake is one line and exit 2."""
    if kind not in KINDS:
        fail(f"KIND: expected one of {', '.join(KINDS)}, found {kind[:40]!r}")
    try:
        return _find(folder, kind, db_url)
    except UserError as exc:
        fail(str(exc))


def _find(folder: Path, kind: str, db_url: str | None) -> ButlerConfig:
    from butler.roster_channels import keeper as find
    from butler.roster_folders import load_each

    def roster(where: Path) -> list[ButlerConfig]:
        return [c for c in load_each(where) if isinstance(c, ButlerConfig)]

    return find(folder.expanduser().resolve(), kind, roster, db_url)


def with_database(config: ButlerConfig, work: Callable[[Any], Awaitable[T]]) -> T:
    """Open the butler's database, run ``work`` on its senders store, close it."""
    from butler.store.channel_senders import SenderStore
    from butler.store.opening import open_store

    async def go() -> T:
        opened = await open_store(config.essentials())
        try:
            return await work(SenderStore(opened.db))
        finally:
            await opened.close()

    return run(go())


@channels_app.command("pair", epilog=PAIR_EPILOG)
def pair(
    kind: Kind,
    config: FolderOption,
    minutes: Annotated[
        int, typer.Option(min=1, max=1440, help="Minutes before the code expires.")
    ] = 10,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Print a one-time code that pairs whoever sends it to the channel."""
    from butler.channels.pairing import issue

    cfg = keeper(config, kind, database_url)
    code, expires = with_database(cfg, lambda senders: issue(senders, kind, minutes))
    typer.echo(code)
    typer.echo(
        f"Send this code to the {kind} channel of {cfg.name} within {minutes} minutes "
        f"(until {expires:%H:%M} UTC); it pairs the one sender who sends it.",
        err=True,
    )


@channels_app.command(
    "list",
    epilog="[bold]Examples[/bold]\n\n  butler channels list -c roster\n\n"
    "  butler channels list -c roster/health --kind email",
)
def list_senders(
    config: FolderOption,
    kind: Annotated[str | None, typer.Option("--kind", help="Only this channel.")] = None,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Show the paired senders (channel, sender id, name, when paired) and how each channel
    proves who a sender is."""
    cfg = keeper(config, kind, database_url) if kind else _any_keeper(config, database_url)
    found = with_database(cfg, lambda senders: senders.senders(kind))
    if not found:
        typer.echo(f"no paired senders for {cfg.name}; pair one with butler channels pair")
    else:
        table = Table("channel", "sender", "name", "paired at")
        for row in found:
            paired = row["paired_at"].strftime("%Y-%m-%d %H:%M:%S %Z")
            table.add_row(row["channel"], row["sender"], row["display_name"] or "", paired)
        console().print(table)
    for each in [kind] if kind else KINDS:
        settings = _settings(cfg, each)
        if settings is not None:
            typer.echo(f"{each}: senders {settings.proof()}")


def _settings(config: ButlerConfig, kind: str) -> Any:
    from butler.roster_channels import settings_of
    from butler.roster_folders import load_each

    def roster(where: Path) -> list[ButlerConfig]:
        return [c for c in load_each(where) if isinstance(c, ButlerConfig)]

    return settings_of(config, kind, roster)


@channels_app.command(
    "unpair",
    epilog="[bold]Example[/bold]\n\n  butler channels unpair telegram 123456789 -c roster",
)
def unpair(
    kind: Kind,
    sender: Annotated[str, typer.Argument(help="The sender id, as `butler channels list` shows.")],
    config: FolderOption,
    database_url: DatabaseUrlOption = None,
) -> None:
    """Forget a paired sender: the channel ignores them from their next message on."""
    cfg = keeper(config, kind, database_url)
    if not with_database(cfg, lambda senders: senders.unpair(kind, sender)):
        fail(f"{kind}: no paired sender {sender[:80]!r} for {cfg.name}; see butler channels list")
    typer.echo(f"unpaired {sender} from {kind} of {cfg.name}")


def _any_keeper(folder: Path, db_url: str | None) -> ButlerConfig:
    """The keeper of the first channel kind the folder has."""
    for kind in KINDS:
        try:
            return _find(folder, kind, db_url)
        except UserError:
            continue
    fail(f"{folder}: no chat channel configured here; see docs/channels.md")
