"""The ``butler`` command line: one module per command group, assembled here.

Commands assemble and hand over; they hold no business logic. Each group
module imports only :mod:`butler.cli.common` and the core, never another
group, so the command line has no import cycle.

A command's module is imported only when that command runs: ``butler
--help`` lists every command from :data:`COMMANDS` (checked against each
command's own help by ``tests/cli/test_lazy.py``), so asking for one command
never pays for the others' imports (the MCP client, the database driver, the
daemon).
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

from butler.cli.common import Command, Group, sub_app

#: Each command of ``butler``: the module under butler.cli defining it, and its help line.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init", "Make a new butler folder: butler.toml (commented), CLAUDE.md, skills/."),
    "run": (
        "run",
        "Run one butler daemon: MCP at /mcp (streamable HTTP) and /sse, health at /health.",
    ),
    "trigger": ("sessions", "Run one session on the running butler and print its answer."),
    "sessions": (
        "sessions",
        "List the butler's recent sessions: status, source, duration, cost, error.",
    ),
    "logs": (
        "sessions",
        "Show one session whole: prompt, tool calls, answer or error (--follow).",
    ),
    "db": ("run", "Database commands."),
    "ask": ("ask", "Answer a question from the named sources, using the default agent headless."),
    "chat": ("ask", "Open the default agent interactively with the named sources in its folder."),
    "sources": (
        "ask",
        "The sources `butler ask` and `butler chat` can read: git checkouts, folders, files.",
    ),
    "up": ("roster", "Run every butler of the roster in this one process."),
    "worker": (
        "worker",
        "Run the sessions the roster's daemons hand to workers, on this machine.",
    ),
    "workers": ("workers", "List the workers serving the roster's butlers: host, load, heartbeat."),
    "list": (
        "roster",
        "Show the roster's butlers: port, runtime, schedules and whether each is up.",
    ),
    "service": (
        "service",
        "Run the roster as a service of your user: a systemd user unit for butler up.",
    ),
    "dashboard": (
        "dashboard",
        "Serve one page listing every butler of the roster: today's sessions, spend, what is next.",
    ),
    "adapter": (
        "contract",
        "The adapter contract: spawn / resume / check_status sessions through files.",
    ),
    "spawn": (
        "builders",
        "Delegate work to a builder: a task, a protocol, a spec, or a bare shell.",
    ),
    "attach": ("builders", "Join a builder's tmux session (detach again with Ctrl-b d)."),
    "builders": (
        "builders",
        "List the butler's builders, grouped by type, from its session records.",
    ),
    "stop": (
        "builders",
        "End a running builder's runtime; it is recorded cancelled (prune removes it later).",
    ),
    "prune": (
        "builders",
        "Remove finished builders' worktrees, merged branches and tmux sessions.",
    ),
    "credentials": (
        "credentials",
        "Keys for the butler's runtimes (e.g. ANTHROPIC_API_KEY), kept in its database.",
    ),
    "notify": ("notify", "The channels through which the butler reaches its person."),
    "channels": ("channels", "Pair the people who may talk to your butlers from chat apps."),
    "token": (
        "token",
        "Print the butler's owner token: send it as 'Authorization: Bearer <token>'.",
    ),
}


def real_command(name: str) -> TyperCommand | TyperGroup:
    """The command ``name`` as its module defines it (importing that module)."""
    module = importlib.import_module(f"butler.cli.{COMMANDS[name][0]}")
    built = typer.main.get_command(module.app)
    if isinstance(built, TyperGroup):
        found = built.commands.get(name)
        if found is None:
            raise LookupError(f"butler.cli.{COMMANDS[name][0]} defines no command {name!r}")
        return found
    return built


class LazyGroup(Group):
    """``butler``: lists its commands from :data:`COMMANDS`, imports one only to run it."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> TyperCommand | TyperGroup | None:
        if cmd_name not in COMMANDS:
            return None
        if getattr(ctx, "_butler_listing", False):
            # Only the help line is wanted: a stand-in spares importing the command.
            return Command(cmd_name, help=COMMANDS[cmd_name][1])
        return real_command(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        ctx._butler_listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            ctx._butler_listing = False


app = sub_app(
    name="butler",
    cls=LazyGroup,
    help="Personal AI agent daemons: one MCP server per butler, locked-down agent sessions.",
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
