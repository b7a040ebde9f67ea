"""The ``butler`` command line: one module per command group, assembled here.

Commands assemble and hand over; they hold no business logic. Each group
module imports only :mod:`butler.cli.common` and the core, never another
group, so the command line has no import cycle.

A command's module is imported only when that command runs: ``butler
--help`` lists every command from :data:`COMMANDS` (checked against each
command's own help by ``tests/test_cli_lazy.py``), so asking for one command
never pays for the others' imports (the MCP client, the database driver, the
daemon).
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from butler.cli.common import Command, Group, sub_app

#: The panels ``butler --help`` groups its commands in, in order.
DAEMON, SESSIONS, BUILDERS, CHANNELS, SETUP = "Daemon", "Sessions", "Builders", "Channels", "Setup"


class Entry(NamedTuple):
    """One command of ``butler``: where it is defined, its help line, its panel."""

    #: The module under butler.cli defining it.
    module: str
    help: str
    panel: str
    #: An old spelling: the command it now is (``builders spawn``), said on stderr when used.
    now: str | None = None


#: Each command of ``butler``, in the order ``--help`` lists them within their panel.
COMMANDS: dict[str, Entry] = {
    "run": Entry(
        "run",
        "Run one butler daemon: MCP at /mcp (streamable HTTP) and /sse, health at /health.",
        DAEMON,
    ),
    "up": Entry("roster", "Run every butler of the roster in this one process.", DAEMON),
    "stop": Entry(
        "daemon",
        "Stop a butler's daemon (or butler up's roster): its sessions drain first.",
        DAEMON,
    ),
    "restart": Entry(
        "daemon", "Stop a butler's daemon and start it again as it was started.", DAEMON
    ),
    "list": Entry(
        "roster",
        "Show the roster's butlers: port, runtime, schedules and whether each is up.",
        DAEMON,
    ),
    "dashboard": Entry(
        "dashboard",
        "Serve one page listing every butler of the roster: today's sessions, spend, what is next.",
        DAEMON,
    ),
    "worker": Entry(
        "worker", "Run the sessions the roster's daemons hand to workers, on this machine.", DAEMON
    ),
    "workers": Entry(
        "workers", "List the workers serving the roster's butlers: host, load, heartbeat.", DAEMON
    ),
    "trigger": Entry(
        "sessions", "Run one session on the running butler and print its answer.", SESSIONS
    ),
    "sessions": Entry(
        "sessions",
        "List the butler's recent sessions: status, source, duration, cost, error.",
        SESSIONS,
    ),
    "logs": Entry(
        "sessions",
        "Show one session whole: prompt, tool calls, answer or error (--follow).",
        SESSIONS,
    ),
    "adapter": Entry(
        "contract",
        "The adapter contract: spawn / resume / check_status sessions through files.",
        SESSIONS,
    ),
    "ask": Entry(
        "ask",
        "Answer a question from the named sources, using the default agent headless.",
        SESSIONS,
    ),
    "chat": Entry(
        "ask",
        "Open the default agent interactively with the named sources in its folder.",
        SESSIONS,
    ),
    "sources": Entry(
        "ask",
        "The sources `butler ask` and `butler chat` can read: git checkouts, folders, files.",
        SESSIONS,
    ),
    "builders": Entry(
        "builders",
        "Builders: a butler's runtime at work in a git worktree and tmux (spawn, list, stop...).",
        BUILDERS,
    ),
    "notify": Entry(
        "notify", "The channels through which the butler reaches its person.", CHANNELS
    ),
    "channels": Entry(
        "channels", "Pair the people who may talk to your butlers from chat apps.", CHANNELS
    ),
    "init": Entry(
        "init", "Make a new butler folder: butler.toml (commented), CLAUDE.md, skills/.", SETUP
    ),
    "token": Entry(
        "token",
        "Print the butler's owner token: send it as 'Authorization: Bearer <token>'.",
        SETUP,
    ),
    "credentials": Entry(
        "credentials",
        "Keys for the butler's runtimes (e.g. ANTHROPIC_API_KEY), kept in its database.",
        SETUP,
    ),
    "db": Entry("run", "Database commands.", SETUP),
    "service": Entry(
        "service",
        "Run the roster as a service: a systemd unit for butler up, checked first.",
        SETUP,
    ),
    "images": Entry(
        "images",
        "Make the compose deployment's base images on this machine (no registry needed).",
        SETUP,
    ),
    # The builder commands' old spellings, listed nowhere and said to be old when used.
    "spawn": Entry("builders", "", BUILDERS, now="builders spawn"),
    "attach": Entry("builders", "", BUILDERS, now="builders attach"),
    "prune": Entry("builders", "", BUILDERS, now="builders prune"),
}
#: ``butler stop ID``, as it was before builders had a group: ``butler builders stop ID``.
OLD_STOP = "builders stop"

EPILOG = (
    "[bold]Examples[/bold], one per panel\n\n"
    "  daemon:    butler run -c roster/health   (and butler stop -c roster/health)\n\n"
    '  sessions:  butler trigger -c roster/health "What is due today?"\n\n'
    '  builders:  butler builders spawn -c roster/general "Fix the bug in auth.py"\n\n'
    "  channels:  butler notify test -c roster/health\n\n"
    "  setup:     butler init finance\n\n"
    "-c DIR names a butler's folder; inside one, it may be left out. "
    "Every command has --help with examples."
)


def deprecated(old: str, now: str) -> None:
    """Say on stderr that ``butler OLD`` is an old spelling (its output stays as it was)."""
    typer.echo(
        f"butler: `butler {old}` is now `butler {now}`; the old spelling will be removed "
        "in a later release",
        err=True,
    )


def real_command(name: str) -> TyperCommand | TyperGroup:
    """The command ``name`` as its module defines it (importing that module)."""
    entry = COMMANDS[name]
    return _defined(entry.module, (entry.now or name).split())


def _defined(module_name: str, path: list[str]) -> TyperCommand | TyperGroup:
    """The command at ``path`` (``["builders", "spawn"]``) of ``butler.cli.MODULE``."""
    module = importlib.import_module(f"butler.cli.{module_name}")
    found: Any = typer.main.get_command(module.app)
    for step in path:
        if not isinstance(found, TyperGroup):
            break  # a module of one command: the command itself
        inner = found.commands.get(step)
        if inner is None:
            raise LookupError(f"butler.cli.{module_name} defines no command {' '.join(path)!r}")
        found = inner
    return found


class LazyGroup(Group):
    """``butler``: lists its commands from :data:`COMMANDS`, imports one only to run it."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> TyperCommand | TyperGroup | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        if getattr(ctx, "_butler_listing", False):
            # Only the help line is wanted: a stand-in spares importing the command.
            return Command(
                cmd_name, help=entry.help, rich_help_panel=entry.panel, hidden=bool(entry.now)
            )
        if entry.now:
            deprecated(cmd_name, entry.now)
        return real_command(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[Any, Any, list[str]]:
        # ``butler stop ID`` stopped a builder before builders had a group of their own.
        if args[:1] == ["stop"] and any(not a.startswith("-") for a in _positionals(args[1:])):
            deprecated("stop ID", f"{OLD_STOP} ID")
            return "stop", _defined("builders", OLD_STOP.split()), args[1:]
        return super().resolve_command(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        ctx._butler_listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            ctx._butler_listing = False


def _positionals(args: list[str]) -> list[str]:
    """The arguments that are neither an option nor the value of ``-c DIR`` or ``-r DIR``."""
    found, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-c", "--config", "-r", "--roster"):
            skip = True
        elif not arg.startswith("-"):
            found.append(arg)
    return found


app = sub_app(
    name="butler",
    cls=LazyGroup,
    help="Personal AI agent daemons: one MCP server per butler, locked-down agent sessions.",
    epilog=EPILOG,
)


def _version(value: bool) -> None:
    if value:
        from butler import __version__

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
