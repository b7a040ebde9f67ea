"""A butler's sessions run by `butler worker` on another "machine" (a network namespace
joined by a veth link), calling back to their butler across the link."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import REPO, DaemonProcess, butler_client, free_port
from tests.workers.machines import Machine, machine

pytestmark = pytest.mark.slow

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


def _butler(roster: Path, host: str, port: int) -> Path:
    folder = roster / "tester"
    folder.mkdir(parents=True)
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
        + "\n",
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


def _worker(place: Machine, roster: Path, dsn: str, data: Path) -> subprocess.Popen[str]:
    argv = place.argv(
        sys.executable,
        "-m",
        "butler.cli",
        "worker",
        "--roster",
        str(roster),
        "--only",
        "tester",
        "--database-url",
        dsn,
        "--log-format",
        "json",
    )
    env = {**os.environ, "BUTLER_DATA_DIR": str(data)}
    return subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


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
                async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                    result = await client.call_tool("trigger", {"prompt": "greeting"})
                    answer = result.structured_content
                    assert answer["success"], (answer, daemon.logs())
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
                    output, _ = worker.communicate(timeout=60)
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
                output, _ = worker.communicate(timeout=60)
                assert worker.returncode == 1, output
                lines = [line for line in output.splitlines() if "cannot reach" in line]
                assert len(lines) == 1, output
                assert f"{linked.peer}:{port}/health" in lines[0]
                assert "takes none of its sessions" in lines[0]
            finally:
                daemon.stop()
    finally:
        await server.stop()
