"""Workers are visible: `butler workers` and the roster page list each worker on its
"machine" (host, butlers, capacity, running sessions, last heartbeat), a killed one shows
as lost, and a session's page says which worker ran it."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys

import httpx
import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import REPO, TEST_TOKEN, butler_client, eventually, free_port
from tests.workers.fleet import (
    fetch,
    held_runtime,
    route_to_daemon,
    start_daemon,
    start_worker,
    stop,
    write_butler,
)
from tests.workers.machines import machine

pytestmark = pytest.mark.slow


def butler_workers(roster, dsn: str, *flags: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "butler.cli", "workers", "--roster", str(roster)]
    return subprocess.run(
        [*argv, "--database-url", dsn, *flags],
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def listed(roster, dsn: str) -> list[dict]:
    done = butler_workers(roster, dsn, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_workers_listed_with_their_load_a_killed_one_lost_a_session_names_its_worker(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    release = tmp_path / "release"
    # A row beat each 10 s, lost after 30 s; a job's heartbeat each 10 s (PgQueuer re-picks
    # it after 20 s): long enough that a loaded machine's delays lose nothing.
    beats = ("--heartbeat-timeout", "20")
    try:
        with machine() as first, machine() as second:
            for place in (first, second):
                route_to_daemon(place)
            port = free_port()
            public = f"http://{first.peer}:{port}"
            folder = write_butler(roster, port, public, held_runtime(roster, release), limit=2)
            daemon = start_daemon(folder, port, dsn)
            one = two = None
            try:
                one = start_worker(first, roster, dsn, tmp_path / "one", capacity=2, args=beats)
                two = start_worker(second, roster, dsn, tmp_path / "two", capacity=3, args=beats)
                await eventually(lambda: len(listed(roster, dsn)) == 2, timeout=60, interval=0.5)
                async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                    call = asyncio.create_task(client.call_tool("trigger", {"prompt": "held"}))

                    def one_running() -> bool:
                        return sum(w["running"] for w in listed(roster, dsn)) == 1

                    await eventually(one_running, timeout=60, interval=0.5)
                    workers = listed(roster, dsn)
                    assert {w["host"] for w in workers} == {socket.gethostname()}
                    assert sorted(w["capacity"] for w in workers) == [2, 3]
                    assert all(w["butlers"] == ["fleet"] for w in workers)
                    assert all(w["status"] == "up" and w["silent_s"] < 30 for w in workers)
                    table = butler_workers(roster, dsn).stdout
                    for w in workers:
                        assert w["name"] in table
                    assert "up" in table and "s ago" in table

                    auth = {"Authorization": f"Bearer {TEST_TOKEN}"}
                    async with httpx.AsyncClient(base_url=daemon.url, headers=auth) as http:
                        page = (await http.get("/roster")).text
                        for w in workers:
                            assert f'data-worker="{w["name"]}"' in page
                        release.touch()
                        answer = (await asyncio.wait_for(call, 120)).structured_content
                        assert answer["success"], answer
                        rows = await fetch(dsn, "SELECT metadata->>'worker' AS w FROM sessions")
                        ran_on = rows[0]["w"]
                        assert ran_on in {w["name"] for w in workers}
                        detail = (await http.get(f"/sessions/{answer['session_id']}")).text
                        assert f"<dt>ran on</dt><dd>{ran_on}</dd>" in detail

                two.kill()  # kill -9: no goodbye, its row stays and stops beating
                two.wait(30)

                def lost() -> list[dict]:
                    return [w for w in listed(roster, dsn) if w["status"] == "lost"]

                gone = await eventually(lost, timeout=120, interval=1)
                assert [w["capacity"] for w in gone] == [3]
                stop(one)  # a clean stop: no longer listed
                assert [w["capacity"] for w in listed(roster, dsn)] == [3]
            finally:
                release.touch()
                for worker in (one, two):
                    stop(worker)
                daemon.stop()
    finally:
        await server.stop()
