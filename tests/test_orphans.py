"""A daemon killed outright leaves runtime trees behind; the next start ends them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid

import asyncpg
import pytest

from butler.spawner.orphans import PGID_KEY, group_members
from butler.store.db import quote_ident
from tests.conftest import TEST_DSN
from tests.helpers import DaemonProcess, butler_client, free_port, wait_until, write_butler

pytestmark = pytest.mark.slow

RUNTIME = {"type": "command", "command": ["bash", "-c", "sleep 300 & sleep 301"]}


async def _session_row(schema: str, sid: str) -> dict:
    conn = await asyncpg.connect(TEST_DSN)
    try:
        row = await conn.fetchrow(
            f"SELECT status, metadata::text AS meta FROM {quote_ident(schema)}.sessions"
            " WHERE id = $1",
            uuid.UUID(sid),
        )
    finally:
        await conn.close()
    import json

    return {"status": row["status"], "metadata": json.loads(row["meta"])}


async def _start(port: int) -> str:
    async with butler_client(f"http://127.0.0.1:{port}/mcp") as client:
        result = await client.call_tool("session_start", {"prompt": "nap"})
    return result.data["session_id"]


def test_a_kill_9_leaves_no_runtime_tree_nor_home_after_the_restart(roster, schema_name, tmp_path):
    port = free_port()
    folder = write_butler(roster, "tester", port=port, schema=schema_name, runtime=RUNTIME)
    # without the jail (whose death takes the tree): the reaping is what is under test
    env = {"BUTLER_DATA_DIR": str(tmp_path / "data"), "BUTLER_SANDBOX": "none"}
    first = DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env).start()
    pgid = None
    try:
        sid = asyncio.run(_start(port))
        meta = wait_until(
            lambda: asyncio.run(_session_row(schema_name, sid))["metadata"].get(PGID_KEY)
        )
        pgid = int(meta)
        wait_until(lambda: len(group_members(pgid)) == 3)  # bash and its two sleeps
        home = tmp_path / "data" / "butlers" / "tester" / "homes" / sid
        assert home.is_dir()
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
        assert len(group_members(pgid)) == 3  # orphaned, still running
        with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as second:
            assert group_members(pgid) == [], second.logs()
            assert not home.exists()  # a command runtime cannot resume: nothing reads it again
            row = asyncio.run(_session_row(schema_name, sid))
            assert row["status"] == "failed"
    finally:
        if first.proc.poll() is None:
            first.proc.kill()
        if pgid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)


def test_a_reused_pid_is_never_killed():
    import subprocess

    from butler.processes import start_ticks
    from butler.spawner.orphans import reap

    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        ticks = start_ticks(stranger.pid)
        assert reap(stranger.pid, ticks - 1) is False  # recorded for an earlier process
        assert stranger.poll() is None
        assert reap(stranger.pid, ticks) is True
        assert stranger.wait(10) == -signal.SIGKILL
    finally:
        stranger.kill()
        stranger.wait()
