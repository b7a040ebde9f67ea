"""The command line imports what the command asked for, and no more.

Speed is measured in ``benchmarks/cli.py``; here, what is imported: ``butler
--help`` must not load the daemon, the MCP stack or the database driver, and
the help lines it shows without importing a command are that command's own.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from butler.cli import COMMANDS, real_command
from tests.helpers import REPO

#: What only a daemon, an MCP client or the database needs.
HEAVY = (
    "fastmcp",
    "mcp",
    "asyncpg",
    "uvicorn",
    "starlette",
    "httpx",
    "butler.daemon",
    "butler.server",
    "butler.roster",
    "butler.spawner",
    "butler.sandbox",
)


def imported_by(*argv: str) -> set[str]:
    """The modules loaded by the time ``butler ARGV`` exits (run in a subprocess)."""
    script = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
        f"sys.argv = ['butler', *{list(argv)!r}]\n"
        "from butler.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("argv", [("--help",), ("--version",), ("run", "--help")])
def test_help_and_version_load_no_daemon_mcp_or_database(argv):
    modules = imported_by(*argv)
    assert "typer" in modules  # the list is what we think it is
    assert heavy_in(modules) == []
    assert "pydantic_settings" not in modules


def test_help_does_not_import_every_command():
    modules = imported_by("--help")
    assert not any(m.startswith("butler.cli.") and m != "butler.cli.common" for m in modules)


def test_each_command_help_line_is_its_own():
    # `butler --help` shows COMMANDS' lines without importing the commands: they
    # must say what the commands themselves say.
    for name, (_, line) in COMMANDS.items():
        command = real_command(name)
        assert command.help is not None, name
        own = command.help.strip().splitlines()[0]
        assert own == line, f"butler {name}: COMMANDS says {line!r}, the command {own!r}"
