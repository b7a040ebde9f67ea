"""A butler's sessions run by `butler worker` on another "machine" (a network namespace
joined by a veth link), calling back to their butler across the link."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psutil
import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import butler_client, eventually, free_port, require_jail
from tests.workers.machines import machine
from tests.workers.tester import (
    JAILED,
    LinkDaemon,
    link_butler,
    link_worker,
    output_of,
    picked_by,
    worker_log,
)

pytestmark = pytest.mark.slow


async def test_a_session_runs_on_a_worker_machine_and_calls_its_butler_across_the_link(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    log = tmp_path / "worker.log"
    try:
        with machine() as place:
            port = free_port()
            folder = link_butler(roster, place.peer, port)
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            try:
                worker = link_worker(place, roster, dsn, tmp_path / "worker-data")
                # Past the daemon's own bound (the session's 60 s and the pickup grace), so
                # a session no worker ran fails with the daemon's reason, not the client's.
                async with butler_client(f"{daemon.url}/mcp", timeout=180) as client:
                    result = await client.call_tool("trigger", {"prompt": "greeting"})
                    answer = result.structured_content
                    assert answer["success"], (
                        answer,
                        worker_log(tmp_path / "worker-data"),
                        daemon.logs(),
                    )
                    assert answer["output"].strip() == "worker says hi"
                    state = await client.call_tool("state_get", {"key": "greeting"})
                    assert "from-worker" in state.content[0].text
                    row = await client.call_tool(
                        "session_get", {"session_id": answer["session_id"]}
                    )
                    assert "worker" in row.structured_content["metadata"]
            finally:
                if worker is not None:
                    worker.terminate()
                    output = output_of(worker, tmp_path / "worker-data")
                    log.write_text(output)
                daemon.stop()
        # On the daemons' URL, the worker says it reaches more than it needs (once).
        warned = [line for line in log.read_text().splitlines() if "more than a worker" in line]
        assert len(warned) == 1, warned
    finally:
        await server.stop()


async def test_a_worker_that_cannot_reach_its_butler_says_so_in_one_line_and_takes_no_work(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    try:
        with machine() as linked, machine(linked=False) as cut_off:
            port = free_port()
            folder = link_butler(roster, linked.peer, port)
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=linked.peer).start()
            try:
                worker = link_worker(cut_off, roster, dsn, tmp_path / "worker-data")
                output = output_of(worker, tmp_path / "worker-data")
                assert worker.returncode == 1, output
                lines = [line for line in output.splitlines() if "cannot reach" in line]
                assert len(lines) == 1, output
                assert f"{linked.peer}:{port}/health" in lines[0]
                assert "takes none of its sessions" in lines[0]
            finally:
                daemon.stop()
    finally:
        await server.stop()


def _sleeping(marker: str) -> list[psutil.Process]:
    """The runtime ``sleep marker``, wherever it runs (its argv names sleep's whole path)."""
    return [
        p
        for p in psutil.process_iter(["cmdline"])
        if (p.info["cmdline"] or [""])[-1] == marker and Path(p.info["cmdline"][0]).name == "sleep"
    ]


async def test_a_killed_workers_session_is_recorded_failed_by_the_next_worker_never_run_twice(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    require_jail()
    marker = "307.25"  # this test's runtime, found by its argv
    try:
        with machine() as place:
            port = free_port()
            folder = link_butler(roster, place.peer, port)
            toml = folder / "butler.toml"
            toml.write_text(
                toml.read_text().replace(
                    toml.read_text().split("command = ")[1].splitlines()[0],
                    json.dumps(["sleep", marker]),
                )
            )
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            first = second = None
            try:
                # Jailed: bubblewrap ends the jail with the worker (--die-with-parent).
                first = link_worker(place, roster, dsn, tmp_path / "first", JAILED)
                async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                    call = asyncio.create_task(client.call_tool("trigger", {"prompt": "nap"}))
                    picked = await eventually(lambda: picked_by(dsn), timeout=60)
                    await eventually(lambda: _sleeping(marker), timeout=60)  # it runs
                    first.kill()  # kill -9: no drain, no goodbye
                    first.wait(30)
                    second = link_worker(
                        place, roster, dsn, tmp_path / "second", args=("--heartbeat-timeout", "3")
                    )
                    answer = (await asyncio.wait_for(call, 120)).structured_content
                assert not answer["success"]
                assert f"the worker {picked} stopped while this session ran" in answer["error"]
                assert "it is not run again" in answer["error"]
                # The first worker's runtime died with it (its jail dies with its parent);
                # the second worker started none: nothing of this session runs anywhere.
                assert _sleeping(marker) == []
            finally:
                for proc in _sleeping(marker):
                    proc.kill()
                for worker in (first, second):
                    if worker is not None and worker.poll() is None:
                        worker.terminate()
                        worker.wait(60)
                daemon.stop()
    finally:
        await server.stop()
