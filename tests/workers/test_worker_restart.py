"""A worker killed with ``kill -9`` mid-session: the next worker started on its machine
records that session (never runs it again) and removes what the killed one left."""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path

import psutil
import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import butler_client, eventually, free_port, require_jail
from tests.workers.machines import machine
from tests.workers.tester import LinkDaemon, link_worker, picked_by, probe_butler

pytestmark = pytest.mark.slow


def _left(tmp: Path, data: Path) -> list[str]:
    """What a worker leaves of a session on its machine: workspaces, jail folders, homes,
    ledger entries."""
    found = [*tmp.glob("butler_tester_*"), *tmp.glob("butler-jail-*")]
    found += (data / "butlers" / "tester" / "homes").glob("*")
    found += (data / "workers" / "running").glob("*")
    return sorted(str(path) for path in found)


def _probes(folder: Path) -> list[psutil.Process]:
    """This test's runtimes (their script is in its butler's folder), wherever they run."""
    script = str(folder / "jail_probe.py")
    return [p for p in psutil.process_iter(["cmdline"]) if script in (p.info["cmdline"] or [])]


async def test_a_restarted_worker_records_the_killed_ones_session_and_leaves_nothing_of_it(
    own_postgres, tmp_path
):
    require_jail()
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    data = tmp_path / "worker-data"  # the worker machine's data folder, across its restart
    # Its temp folder: short (a jail's socket path is bounded) and the test's alone.
    tmp = Path(tempfile.mkdtemp(prefix="bw-", dir="/tmp"))
    env = {"BUTLER_SANDBOX": "bwrap", "TMPDIR": str(tmp)}
    try:
        with machine() as place:
            port = free_port()
            folder = probe_butler(roster, place.peer, port)
            starts = folder / "starts.txt"
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            first = second = None
            try:
                first = link_worker(place, roster, dsn, data, env)
                plan = json.dumps({"starts": str(starts), "sleep": 600})
                async with butler_client(f"{daemon.url}/mcp", timeout=180) as client:
                    call = asyncio.create_task(client.call_tool("trigger", {"prompt": plan}))
                    picked = await eventually(lambda: picked_by(dsn), timeout=60)
                    await eventually(lambda: starts.is_file() and _probes(folder), timeout=60)
                    left = _left(tmp, data)
                    assert len(left) == 4, left  # workspace, jail folder, home, ledger entry
                    first.kill()  # kill -9: no drain, no goodbye
                    first.wait(30)
                    assert _left(tmp, data) == left  # nothing removed them
                    # The heartbeat reclaim stays at its 60 s: what records the session is
                    # the restarted worker's own start.
                    second = link_worker(place, roster, dsn, data, env)
                    answer = (await asyncio.wait_for(call, 120)).structured_content
                    assert not answer["success"]
                    assert f"the worker {picked} stopped while this session ran" in answer["error"]
                    assert "found it at its start" in answer["error"]
                    assert "it is not run again" in answer["error"]
                    # The queue is not held by the dead session: the next one runs.
                    again = await client.call_tool("trigger", {"prompt": json.dumps({})})
                    assert again.structured_content["success"], again.structured_content
                assert starts.read_text().count("\n") == 1  # the killed session started once
                assert _left(tmp, data) == []
                assert _probes(folder) == []
            finally:
                for proc in _probes(folder):
                    proc.kill()
                for worker in (first, second):
                    if worker is not None and worker.poll() is None:
                        worker.terminate()
                        worker.wait(60)
                daemon.stop()
    finally:
        await server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
