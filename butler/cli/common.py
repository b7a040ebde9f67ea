"""What every ``butler`` command shares: the one-line failure, config loading, running.

A user's mistake is one line on stderr and exit status 2; any other error of
butler's own is one line and exit status 1; never a traceback.

Every command pays for what this module imports, so it imports the config
(pydantic) and rich only when a command asks for them (``butler --help`` and
``butler token`` stay under 300 ms of CPU: ``benchmarks/cli.py``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Coroutine, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

from butler.cli.plain_params import read_plainly
from butler.errors import ButlerError, UserError

if TYPE_CHECKING:
    from rich.console import Console

    from butler.config import ButlerConfig
    from butler.glance import Glance

T = TypeVar("T")

#: The settings every sub-app of the command line is built with.
TYPER_SETTINGS: dict[str, Any] = {
    "no_args_is_help": True,
    "add_completion": False,
    "rich_markup_mode": "rich",
    "context_settings": {"help_option_names": ["-h", "--help"]},
}

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="The butler's folder (holding butler.toml and CLAUDE.md), e.g. roster/health; "
        "by default this folder, when it holds a butler.toml.",
        show_default=False,
    ),
]
LOG_LEVELS = ("debug", "info", "warning", "error")
LogLevelOption = Annotated[str, typer.Option(help="debug, info, warning or error.")]
LOG_FORMATS = ("auto", "text", "json")
LogFormatOption = Annotated[
    str,
    typer.Option(help="auto (coloured text on a terminal, else JSON lines), text or json."),
]
DatabaseUrlOption = Annotated[
    str | None,
    typer.Option("--database-url", help="PostgreSQL URL (default DATABASE_URL, else embedded)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _without_flag_types(params: list[Any]) -> list[Any]:
    # A flag takes no value, so the help's "<bool>" placeholder only misleads.
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return read_plainly(params)


class Command(TyperCommand):
    """A command whose help shows no value placeholder on flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _without_flag_types(super().get_params(ctx))


class Group(TyperGroup):
    """A command group whose help shows no value placeholder on flags."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _without_flag_types(super().get_params(ctx))


class App(typer.Typer):
    """A Typer whose commands are :class:`Command`."""

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


def sub_app(**settings: Any) -> App:
    """A command group with the settings the whole command line shares."""
    return App(**{"cls": Group, **TYPER_SETTINGS, **settings})


def console() -> Console:
    """Where tables go: the terminal's width, or whole lines (never cut) for a pipe or file."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=1000)


def waiting(message: str) -> contextlib.AbstractContextManager[Any]:
    """A spinner with ``message`` on stderr while a long wait lasts, when a person watches it.

    On a pipe or a file nothing is shown: scripts read stdout and stderr as data.
    """
    if not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status(message)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one error line and exit."""
    typer.echo(f"butler: error: {message}", err=True)
    raise typer.Exit(code)


#: ``--allow-root``, the same for ``run`` and ``up`` (butler/root.py says why it is needed).
AllowRootOption = Annotated[
    bool,
    typer.Option(
        "--allow-root",
        envvar="BUTLER_ALLOW_ROOT",
        help="Run even as root (refused otherwise); also BUTLER_ALLOW_ROOT=1.",
    ),
]


def refuse_root(allow_root: bool) -> None:
    """One line and exit 2 when a daemon would start as root without ``--allow-root``."""
    from butler.root import root_refusal

    refusal = root_refusal(allow_root)
    if refusal:
        fail(refusal)


def butler_folder(config_dir: Path | None) -> Path:
    """The butler's folder: ``--config``, else the current folder when it holds butler.toml."""
    if config_dir is not None:
        return config_dir
    here = Path.cwd()
    if (here / "butler.toml").is_file():
        return here
    fail(
        "which butler? give its folder with -c, e.g. -c roster/health, or run this inside "
        "a butler's folder (one holding butler.toml)"
    )


def shown_folder(config_dir: Path | None) -> str:
    """The butler's folder as the person gave it, for a command line shown to them."""
    return str(config_dir) if config_dir is not None else "."


def load(config_dir: Path | None, **overrides: Any) -> ButlerConfig:
    """The butler's config; a mistake in it is one line and exit 2."""
    from butler.config import load_config

    try:
        return load_config(butler_folder(config_dir), **overrides)
    except UserError as exc:
        fail(str(exc))


def address(config_dir: Path | None) -> Glance:
    """What a command needs to reach the butler's running daemon (name, URL, folder).

    Where its daemon noted it serves, when one runs: started with ``--port``, it is
    not where butler.toml says.
    """
    from dataclasses import replace

    from butler.daemons import daemon_of

    found = glance_at(config_dir)
    daemon = daemon_of(found)
    if daemon is not None and (daemon.host, daemon.port) != (found.host, found.port):
        return replace(found, host=daemon.host, port=daemon.port)
    return found


def glance_at(config_dir: Path | None, *needs: str) -> Glance:
    """The folder's settings read plainly (:mod:`butler.glance`): much cheaper than the load.

    When they are unclear, or one of the fields ``needs`` names is, the folder
    is loaded fully, which names the mistake in one line as ``butler run`` would.
    """
    from butler.glance import glance

    config_dir = butler_folder(config_dir)
    found = glance(config_dir)
    if found is None or any(getattr(found, field) is None for field in needs):
        return load(config_dir).glance()
    return found


def serve(configs: Sequence[ButlerConfig], command: str, roster: Path | None = None) -> None:
    """Run the daemon of ``configs`` (``butler run``, or ``up`` of ``roster``) until it stops.

    Before anything slow, a butler already served, or a port another process
    holds, is one line naming it and how to stop it (:mod:`butler.daemons`).
    A daemon asked to restart (``butler restart``) runs this command again in
    the same process once it has stopped: the same arguments, environment and
    terminal.
    """
    from butler import daemons

    butlers = [config.glance() for config in configs]
    refuse_a_second_start(butlers, command, roster)
    daemons.note_starting(butlers, daemons.Start(command, roster))
    again = False
    try:
        from butler.roster import up

        run(up(list(configs), named=command == "up"))
        again = daemons.restart_asked(butlers)
    finally:
        if not again:
            daemons.forget(butlers)
    if again:
        typer.echo("butler: restarting, as asked", err=True)
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def refuse_a_second_start(
    butlers: Sequence[Glance], command: str, roster: Path | None = None
) -> None:
    """One line and exit 2 when a butler is served already, or its port is taken.

    Cheap enough to run on a plain reading of the folders, before the whole
    configuration is even loaded: the person hears it in a fraction of a second.
    """
    from butler import daemons

    try:
        daemons.refuse_a_second_start(butlers, daemons.Start(command, roster))
    except UserError as exc:
        fail(str(exc))


def check_log_level(level: str) -> str:
    """``--log-level`` as given, or one line naming what is allowed."""
    if level.lower() not in LOG_LEVELS:
        fail(f"--log-level: expected debug, info, warning or error, found {level!r}")
    return level


def check_log_format(log_format: str) -> str:
    """``--log-format`` as given, or one line naming what is allowed."""
    if log_format not in LOG_FORMATS:
        fail(f"--log-format: expected auto, text or json, found {log_format!r}")
    return log_format


def names(raw: str | None) -> list[str]:
    """A comma-separated option as a list, blanks dropped."""
    return [name.strip() for name in (raw or "").split(",") if name.strip()]


class Signalled(Exception):
    """SIGTERM or SIGHUP arrived; the run was cancelled so its cleanup ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


async def cancel_on_signals(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro``; SIGTERM and SIGHUP (a closed terminal) cancel it instead of killing us.

    By default those signals end the process on the spot, skipping the
    ``finally`` blocks that stop child processes and remove temp folders.
    """
    import asyncio
    import signal

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def cancel(signum: int) -> None:
        received.append(signum)
        task.cancel()

    handled = (signal.SIGTERM, signal.SIGHUP)
    for signum in handled:
        loop.add_signal_handler(signum, cancel, signum)
    try:
        return await coro
    except asyncio.CancelledError:
        if received:
            raise Signalled(received[0]) from None
        raise
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)


def run(coro: Coroutine[Any, Any, T], *, signals: bool = False) -> T:
    """Run a coroutine; butler's errors become one line and an exit status.

    With ``signals``, SIGTERM and SIGHUP cancel the run (its cleanup runs)
    and the exit status is 128 + the signal, as a shell reports it.
    """
    import asyncio

    with one_line_errors():
        return asyncio.run(cancel_on_signals(coro) if signals else coro)
    raise AssertionError("unreachable: one_line_errors exits on every error")


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """Butler's errors raised inside become one line and an exit status, never a traceback."""
    from butler.subagent.template import PromptTemplateError

    try:
        yield
    except PromptTemplateError as exc:
        # The spec fixes the message itself; where the file is comes after it.
        fail(f"{exc} (in {exc.path})" if exc.path else str(exc))
    except UserError as exc:
        fail(str(exc), 2)
    except ButlerError as exc:
        fail(str(exc), 1)
    except Signalled as exc:
        raise typer.Exit(128 + exc.signum) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
