"""The command line imports what the command asked for, and no more.

Speed is measured in ``benchmarks/cli.py``; here, what is imported: ``butler
--help`` must not load the daemon, the MCP stack or the database driver, and
the help lines it shows without importing a command are that command's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from butler.cli import COMMANDS, real_command
from tests.helpers import REPO, free_port, write_butler

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


def imported_by(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules loaded by the time ``butler ARGV`` exits (run in a subprocess)."""
    script = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
        f"sys.argv = ['butler', *{list(argv)!r}]\n"
        "from butler.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


#: What validating a whole butler folder costs: the config's models, and through them
#: pydantic (Typer too would reach for pydantic, through its coercion of every option).
VALIDATION = ("pydantic", "butler.config", "typer._adapters")


def heavy_in(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


@pytest.mark.parametrize("argv", [("--help",), ("--version",), ("run", "--help")])
def test_help_and_version_load_no_daemon_mcp_or_database(argv):
    modules = imported_by(*argv)
    assert "typer" in modules  # the list is what we think it is
    assert heavy_in(modules) == []
    assert "pydantic_settings" not in modules


def test_help_does_not_import_every_command():
    modules = imported_by("--help")
    shared = {"butler.cli.common", "butler.cli.plain_params"}  # what every command is built on
    assert not any(m.startswith("butler.cli.") and m not in shared for m in modules)


def test_each_command_help_line_is_its_own():
    # `butler --help` shows COMMANDS' lines without importing the commands: they
    # must say what the commands themselves say.
    for name, entry in COMMANDS.items():
        if entry.now:
            continue  # an old spelling: listed nowhere
        command = real_command(name)
        assert command.help is not None, name
        own = command.help.strip().splitlines()[0]
        assert own == entry.help, (
            f"butler {name}: COMMANDS says {entry.help!r}, the command {own!r}"
        )


def test_token_and_stop_validate_no_folder_and_coerce_no_option_through_pydantic(roster):
    folder = write_butler(roster, "keeper", port=free_port())
    for argv in (
        ("token", "-c", str(folder)),
        ("stop", "-c", str(folder)),
        ("builders", "stop", "task-1", "-c", str(folder)),
    ):
        assert heavy_in(imported_by(*argv), HEAVY + VALIDATION) == [], argv


def test_list_reads_plain_folders_without_validating_them_or_loading_the_daemon(roster):
    write_butler(roster, "keeper", port=free_port(), extra="[[butler.schedule]]\nname = 'a'\n")
    write_butler(roster, "scribe", port=free_port(), runtime={"type": "command"})
    modules = imported_by("list", "--roster", str(roster))
    assert "butler.roster_status" in modules  # the listing ran
    assert heavy_in(modules, HEAVY + VALIDATION) == []


def test_credentials_open_the_database_without_the_daemon_or_validation(
    roster, schema_name, pg_dsn
):
    folder = write_butler(roster, "keeper", port=free_port(), schema=schema_name)
    modules = imported_by("credentials", "list", "-c", str(folder), env={"DATABASE_URL": pg_dsn})
    assert "butler.store.credentials" in modules  # the database was read
    daemon = ("butler.daemon", "butler.server", "butler.spawner", "butler.builders", "fastmcp")
    assert heavy_in(modules, daemon + VALIDATION) == []


def test_the_adapter_contract_talks_to_the_daemon_without_fastmcp_s_client(roster):
    folder = write_butler(roster, "keeper", port=free_port())  # down: refused in one line
    modules = imported_by("adapter", "check_status", "9e0f2a57", "-c", str(folder))
    assert "butler.contract.runner" in modules  # the operation ran
    assert heavy_in(modules, ("fastmcp", "mcp", "httpx", "httpx2")) == []
