"""Each install's data is its own: a schema belongs to the butler folder that first opened
it, and one daemon at a time serves it."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from butler.config import load_config
from butler.daemon import open_database
from butler.store.db import Database
from butler.store.install import InstallTaken
from butler.store.migrations import discover, migrate
from tests.conftest import TEST_DSN
from tests.helpers import REPO, DaemonProcess, free_port, write_butler

pytestmark = pytest.mark.slow  # real PostgreSQL, and daemons as processes


def two_folders(tmp_path: Path, name: str, schema: str | None = None) -> tuple[Path, Path]:
    """The same butler name in two rosters (two checkouts); the second may name a schema."""
    first = write_butler(tmp_path / "one", name, port=free_port())
    second = write_butler(tmp_path / "two", name, port=free_port(), schema=schema)
    return first, second


async def test_two_butlers_of_one_name_from_two_folders_never_share_a_schema(tmp_path, schema_name):
    first, second = two_folders(tmp_path, schema_name)  # the schema is the butler's name
    opened = await open_database(load_config(first, db_url=TEST_DSN))
    await opened.db.execute("INSERT INTO state (key, value) VALUES ('mine', '1')")
    await opened.close()
    with pytest.raises(InstallTaken) as refused:
        await open_database(load_config(second, db_url=TEST_DSN))
    line = str(refused.value)
    assert "\n" not in line and str(first.resolve()) in line and str(second.resolve()) in line
    assert "[butler.db] schema" in line
    again = await open_database(load_config(first, db_url=TEST_DSN))  # its own folder still opens
    await again.close()


async def test_naming_the_schema_shares_its_data_on_purpose(tmp_path, schema_name):
    first, second = two_folders(tmp_path, schema_name, schema=schema_name)
    opened = await open_database(load_config(first, db_url=TEST_DSN))
    await opened.db.execute("INSERT INTO state (key, value) VALUES ('shared', '1')")
    await opened.close()
    moved = await open_database(load_config(second, db_url=TEST_DSN))
    try:
        assert await moved.db.fetchval("SELECT value FROM state WHERE key = 'shared'") == 1
    finally:
        await moved.close()


async def test_a_database_made_by_the_current_code_upgrades_and_keeps_its_data(
    tmp_path, schema_name
):
    # The migrations that shipped before this one, applied as the previous code did.
    before = tmp_path / "migrations-before"
    before.mkdir()
    for migration in discover():
        if migration.version < 15:
            shutil.copy(str(migration.path), before / migration.path.name)
    old = Database(TEST_DSN, schema_name)
    await old.connect()
    try:
        await migrate(old, before)
        await old.execute("INSERT INTO state (key, value) VALUES ('kept', '42')")
        await old.execute(
            "INSERT INTO sessions (id, prompt, status, trigger_source, runtime)"
            " VALUES (gen_random_uuid(), 'before', 'succeeded', 'external', 'command')"
        )
    finally:
        await old.close()
    folder = write_butler(tmp_path / "roster", schema_name, port=free_port())
    opened = await open_database(load_config(folder, db_url=TEST_DSN))
    try:
        assert 15 in [m.version for m in opened.applied]
        assert await opened.db.fetchval("SELECT value FROM state WHERE key = 'kept'") == 42
        assert await opened.db.fetchval("SELECT prompt FROM sessions") == "before"
        claim = await opened.db.fetchrow("SELECT name, folder FROM butler_install")
        assert dict(claim) == {"name": schema_name, "folder": str(folder.resolve())}
    finally:
        await opened.close()


def test_a_second_daemon_for_the_same_butler_is_refused_naming_pid_and_host(
    butler_dir, _isolated_data_dir
):
    env = {"BUTLER_DATA_DIR": str(_isolated_data_dir)}
    first = DaemonProcess(butler_dir, port=free_port(), database_url=TEST_DSN, env=env)
    with first:
        assert first.proc is not None
        # Another data folder (another HOME): only the database knows who serves it.
        elsewhere = {**os.environ, "BUTLER_DATA_DIR": str(_isolated_data_dir / "elsewhere")}
        second = subprocess.run(
            [sys.executable, "-m", "butler.cli", "run", "--config", str(butler_dir),
             "--port", str(free_port()), "--database-url", TEST_DSN],
            capture_output=True, text=True, cwd=REPO, timeout=120, env=elsewhere,
        )  # fmt: skip
        assert second.returncode == 1, second.stderr
        line = second.stderr.strip().splitlines()[-1]
        assert f"pid {first.proc.pid} on host {socket.gethostname()}" in line
        assert "already served by" in line
        assert f"butler stop -c {butler_dir.resolve()}" in line
        # Killed outright, the first leaves nothing behind: the next one starts.
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait()
        with DaemonProcess(butler_dir, port=free_port(), database_url=TEST_DSN, env=env):
            pass


async def test_the_lease_is_let_go_when_the_daemon_closes(tmp_path, schema_name):
    folder = write_butler(tmp_path / "roster", schema_name, port=free_port())
    config = load_config(folder, db_url=TEST_DSN)
    opened = await open_database(config, serving=True)
    with pytest.raises(InstallTaken, match=f"pid {os.getpid()}"):
        await open_database(config, serving=True)
    await opened.close()
    again = await open_database(config, serving=True)
    try:
        conn = await asyncpg.connect(TEST_DSN, server_settings={"search_path": schema_name})
        row = await conn.fetchrow("SELECT holder_pid, holder_host FROM butler_install")
        await conn.close()
        assert dict(row) == {"holder_pid": os.getpid(), "holder_host": socket.gethostname()}
    finally:
        await again.close()
