"""A butler's sessions run by `butler worker` on another "machine" (a network namespace
joined by a veth link), calling back to their butler across the link."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import asyncpg
import psutil
import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import DaemonProcess, butler_client, eventually, free_port, require_jail
from tests.workers.fleet import start_worker
from tests.workers.machines import Machine, machine

pytestmark = pytest.mark.slow

#: A worker whose runtimes run in the jail (the tests' default is none).
JAILED = {"BUTLER_SANDBOX": "bwrap"}

#: The runtime: reads its MCP config, calls its butler's state_set over MCP with its
#: session token, and answers. What it calls crosses the link to the daemon.
RUNTIME_SCRIPT = """
import asyncio, json, sys
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

entry = next(iter(json.load(open(sys.argv[1]))["mcpServers"].values()))

async def main():
    transport = StreamableHttpTransport(entry["url"], headers=entry.get("headers") or {})
    async with Client(transport) as butler:
        await butler.call_tool("state_set", {"key": sys.argv[2], "value": "from-worker"})

asyncio.run(main())
print("worker says hi")
"""


def _butler(
    roster: Path, host: str, port: int, command: list[str] | None = None, extra: str = ""
) -> Path:
    """Butler ``tester`` on workers; its runtime is ``command`` (by default an MCP client
    of the test's Python, unjailed: the jail shows no virtualenv)."""
    folder = roster / "tester"
    folder.mkdir(parents=True)
    if command is None:
        script = roster / "runtime.py"
        script.write_text(RUNTIME_SCRIPT, encoding="utf-8")
        command = [sys.executable, str(script), "{mcp_config}", "{prompt}"]
    (folder / "butler.toml").write_text(
        "\n".join(
            [
                "[butler]",
                'name = "tester"',
                f"port = {port}",
                f'host = "{host}"',
                "[butler.db]",
                'schema = "workers_test"',
                "[butler.runtime]",
                'type = "command"',
                f"command = {json.dumps(command)}",
                'workers = "remote"',
                "max_concurrent_sessions = 2",
                "timeout_s = 60",
            ]
        )
        + "\n"
        + extra,
        encoding="utf-8",
    )
    (folder / "CLAUDE.md").write_text("You are a test butler.\n", encoding="utf-8")
    return folder


class _Daemon(DaemonProcess):
    """The daemon bound to its end of the link (not loopback)."""

    def __init__(self, *args, host: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.host = host

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def _worker(
    place: Machine,
    roster: Path,
    dsn: str,
    data: Path,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """``butler worker`` for the butler ``tester``, at its default capacity."""
    return start_worker(place, roster, dsn, data, only="tester", capacity=None, env=env, args=args)


def worker_log(tmp_path: Path) -> str:
    """What the test's worker has written so far (for a failing assertion's message)."""
    return (tmp_path / "worker-data" / "worker.log").read_text(errors="replace")


def output_of(worker: subprocess.Popen[str], data: Path, timeout: float = 60) -> str:
    """What the worker started with ``data`` wrote, once it has ended."""
    worker.wait(timeout)
    return (data / "worker.log").read_text()


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
            folder = _butler(roster, place.peer, port)
            daemon = _Daemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            try:
                worker = _worker(place, roster, dsn, tmp_path / "worker-data")
                # Past the daemon's own bound (the session's 60 s and the pickup grace), so
                # a session no worker ran fails with the daemon's reason, not the client's.
                async with butler_client(f"{daemon.url}/mcp", timeout=180) as client:
                    result = await client.call_tool("trigger", {"prompt": "greeting"})
                    answer = result.structured_content
                    assert answer["success"], (answer, worker_log(tmp_path), daemon.logs())
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
            folder = _butler(roster, linked.peer, port)
            daemon = _Daemon(folder, port=port, database_url=dsn, host=linked.peer).start()
            try:
                worker = _worker(cut_off, roster, dsn, tmp_path / "worker-data")
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


async def _picked_by(dsn: str) -> str | None:
    """The worker that picked the newest session, once one did."""
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(
            "SELECT metadata->>'worker' FROM workers_test.sessions ORDER BY created_at DESC LIMIT 1"
        )
    finally:
        await conn.close()


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
            folder = _butler(roster, place.peer, port)
            toml = folder / "butler.toml"
            toml.write_text(
                toml.read_text().replace(
                    toml.read_text().split("command = ")[1].splitlines()[0],
                    json.dumps(["sleep", marker]),
                )
            )
            daemon = _Daemon(folder, port=port, database_url=dsn, host=place.peer).start()
            first = second = None
            try:
                # Jailed: bubblewrap ends the jail with the worker (--die-with-parent).
                first = _worker(place, roster, dsn, tmp_path / "first", JAILED)
                async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                    call = asyncio.create_task(client.call_tool("trigger", {"prompt": "nap"}))
                    picked = await eventually(lambda: _picked_by(dsn), timeout=60)
                    await eventually(lambda: _sleeping(marker), timeout=60)  # it runs
                    first.kill()  # kill -9: no drain, no goodbye
                    first.wait(30)
                    second = _worker(
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
