"""The ``butler`` command as a person types it: version, help, and refusals in one line."""

from __future__ import annotations

import asyncio
import os
import socket

import asyncpg
import pytest

from butler import __version__
from tests.commands import butler
from tests.helpers import free_port, write_butler

pytestmark = pytest.mark.slow


def test_version():
    result = butler("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"butler {__version__}"


def test_run_help_shows_copyable_examples():
    result = butler("run", "--help")
    assert result.returncode == 0, result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert "Examples" in lines
    assert "butler run --config roster/health" in lines
    assert "butler run -c roster/health --port 8201" in lines
    assert "DATABASE_URL=postgresql://localhost/butler butler run -c roster/health" in lines
    for option in ("--config", "--port", "--database-url"):
        assert option in result.stdout


def test_db_migrate_help_shows_an_example():
    result = butler("db", "migrate", "--help")
    assert result.returncode == 0, result.stderr
    assert "butler db migrate --config roster/health" in result.stdout


def test_a_taken_port_is_one_line_and_nothing_is_started(roster, schema_name, pg_dsn):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        folder = write_butler(roster, "tester", port=port, schema=schema_name)
        result = butler("run", "--config", str(folder), "--database-url", pg_dsn)
    assert result.returncode == 2
    line = result.stderr.strip()
    # Named by the process holding it (this test's), before anything is started.
    assert line.startswith(f"butler: error: tester: port {port} is taken by pid {os.getpid()} (")
    assert line.endswith("); stop it, or choose --port N (or BUTLER_PORT)")

    async def schema_exists() -> bool:
        conn = await asyncpg.connect(pg_dsn)
        try:
            return await conn.fetchval(
                "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema_name
            )
        finally:
            await conn.close()

    assert asyncio.run(schema_exists()) is False  # refused before touching the database


def test_an_unreachable_database_is_one_line(roster):
    folder = write_butler(roster, "tester", port=free_port())
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"postgresql://butler:s3cret@127.0.0.1:{port}/butler"
    result = butler("run", "--config", str(folder), "--database-url", url)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"butler: error: cannot connect to PostgreSQL at postgresql://butler:***@127.0.0.1:{port}/"
    )
    assert "s3cret" not in result.stderr


def test_a_bad_log_level_is_one_line(roster):
    folder = write_butler(roster, "tester", port=free_port())
    result = butler("run", "--config", str(folder), "--log-level", "loud")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "butler: error: --log-level: expected debug, info, warning or error, found 'loud'"
    )
