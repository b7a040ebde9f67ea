"""The embedded PostgreSQL: one per data folder, inside it, the folder's owner's own process.

As root (the suite's machines run as root) the server runs in a user namespace
as root's uid with no capability, so root's private folders stay private and
nothing is created elsewhere on the machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import psutil
import pytest

from butler.store.embedded import EmbeddedPostgres

pytestmark = pytest.mark.slow


def servers(pgdata: Path) -> list[psutil.Process]:
    """The PostgreSQL processes whose command line names ``pgdata``."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            argv = " ".join(proc.info["cmdline"] or [])
            if proc.info["name"] == "postgres" and str(pgdata) in argv:
                found.append(proc)
    return found


@pytest.fixture
def private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A data folder under a folder only its owner may enter, as a home is."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    data = home / "data"
    monkeypatch.setenv("BUTLER_DATA_DIR", str(data))
    yield data
    for proc in servers(data):  # a failed test leaves nothing running
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGQUIT)


def capabilities(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(
        next(line for line in status.splitlines() if line.startswith("CapEff:")).split()[1], 16
    )


async def answer(dsn: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval("SELECT current_setting('data_directory')")
    finally:
        await conn.close()


async def test_the_database_lives_in_the_data_folder_as_its_owner_s_process_with_no_capability(
    private: Path,
):
    server = EmbeddedPostgres()
    dsn = await server.start()
    try:
        assert server.pgdata == private / "pgdata"
        assert await answer(dsn) == str(private / "pgdata")
        pids = {s.pid for s in servers(private)}
        (postmaster,) = [p for p in servers(private) if p.ppid() not in pids]
        assert postmaster.uids().effective == os.stat(private).st_uid  # the folder's owner
        assert capabilities(postmaster.pid) == 0  # root's uid, none of root's powers
        assert [c for c in postmaster.net_connections("inet") if c.status == "LISTEN"] == []
        assert os.stat(private.parent).st_mode & 0o777 == 0o700  # nothing was opened up
    finally:
        await server.stop()
    await asyncio.to_thread(lambda: psutil.wait_procs(servers(private), timeout=30))
    assert servers(private) == []


async def test_two_data_folders_run_two_servers_side_by_side(tmp_path: Path):
    first, second = (EmbeddedPostgres(tmp_path / name / "pgdata") for name in ("a", "b"))
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir(mode=0o700)
    dsns = [await first.start(), await second.start()]
    try:
        assert dsns[0] != dsns[1]
        assert [await answer(dsn) for dsn in dsns] == [str(first.pgdata), str(second.pgdata)]
    finally:
        await first.stop()
        await second.stop()
    await asyncio.to_thread(lambda: psutil.wait_procs(servers(tmp_path), timeout=30))
    assert servers(tmp_path) == []


async def test_the_last_user_to_let_go_stops_it(
    private: Path,
):
    one, two = EmbeddedPostgres(), EmbeddedPostgres()
    dsn = await one.start()
    assert await two.start() == dsn  # joined, not started twice
    await one.stop()
    assert await answer(dsn)  # still there for the other
    await two.stop()
    await asyncio.to_thread(lambda: psutil.wait_procs(servers(private), timeout=30))
    assert servers(private) == []
