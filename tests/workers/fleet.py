"""A fleet for the tests: one daemon and several `butler worker` processes, each worker
in a network namespace of its own ("a machine", tests/workers/machines.py).

The daemon listens on every address and names its link address as ``public_url``:
the address its workers' runtimes call it back at. Each machine has a route to
the test's namespace, so a worker on any link reaches that one address.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import uvicorn

from butler.config import load_config
from butler.context import ButlerContext
from butler.daemon import assemble
from butler.http_limits import JsonRpcBodyLimit
from butler.server import build_app
from butler.store.opening import open_store
from tests.helpers import REPO, DaemonProcess, eventually
from tests.workers.machines import Machine

SCHEMA = "fleet_test"


def write_butler(
    roster: Path,
    port: int,
    public_url: str,
    command: list[str],
    *,
    workers: str = "remote",
    limit: int = 3,
    extra: tuple[str, ...] = (),
) -> Path:
    """A butler whose sessions run ``command`` on workers, calling back at ``public_url``."""
    folder = roster / "fleet"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "butler.toml").write_text(
        "\n".join(
            [
                "[butler]",
                'name = "fleet"',
                f"port = {port}",
                'host = "0.0.0.0"',
                f'public_url = "{public_url}"',
                "[butler.db]",
                f'schema = "{SCHEMA}"',
                "[butler.runtime]",
                'type = "command"',
                f"command = {json.dumps(command)}",
                f'workers = "{workers}"',
                f"max_concurrent_sessions = {limit}",
                "timeout_s = 120",
                *extra,
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    (folder / "CLAUDE.md").write_text("You are a test butler.\n", encoding="utf-8")
    return folder


def route_to_daemon(place: Machine) -> None:
    """A way from ``place`` to every address of the test's namespace (through its link)."""
    subprocess.run(
        place.argv("ip", "route", "add", "default", "via", str(place.peer)),
        check=True,
        capture_output=True,
    )


def start_daemon(folder: Path, port: int, dsn: str) -> DaemonProcess:
    return DaemonProcess(folder, port=port, database_url=dsn).start()


def start_worker(
    place: Machine,
    roster: Path,
    dsn: str,
    data: Path,
    *,
    only: str = "fleet",
    capacity: int | None = 2,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """``butler worker`` on ``place`` for the butler ``only``, with ``args`` added; its
    output goes to ``data``/worker.log (a file, not a pipe nobody reads while it runs: a
    full pipe would stop the worker mid-session). ``capacity`` None leaves the worker's
    default."""
    data.mkdir(parents=True, exist_ok=True)
    argv = place.argv(
        sys.executable, "-m", "butler.cli", "worker", "--roster", str(roster), "--only", only
    )
    argv += ["--database-url", dsn, "--log-format", "json"]
    if capacity is not None:
        argv += ["--capacity", str(capacity)]
    argv += args
    everything = {**os.environ, **(env or {}), "BUTLER_DATA_DIR": str(data)}
    with (data / "worker.log").open("w") as log:
        return subprocess.Popen(
            argv, cwd=REPO, env=everything, stdout=log, stderr=subprocess.STDOUT, text=True
        )


@asynccontextmanager
async def served(folder: Path, dsn: str, host: str) -> AsyncIterator[ButlerContext]:
    """The butler of ``folder`` opened, assembled and served at ``host``, in this loop
    (as ``butler run`` does): for a test that reaches into the daemon's spawner."""
    config = load_config(folder)
    opened = await open_store(config.essentials(), dsn, serving=True)
    try:
        butler = await assemble(config, opened.db)
        app = JsonRpcBodyLimit(build_app(butler))
        server = uvicorn.Server(
            uvicorn.Config(app, host=host, port=config.butler.port, log_config=None)
        )
        task = asyncio.create_task(server.serve())
        await eventually(lambda: server.started or task.done(), timeout=30)
        assert not task.done(), task
        try:
            yield butler
        finally:
            server.should_exit = True
            await task
            await butler.spawner.drain(0)
    finally:
        await opened.close()


def stop(worker: subprocess.Popen[str] | None) -> None:
    if worker is not None and worker.poll() is None:
        worker.terminate()
        try:
            worker.wait(60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


async def fetch(dsn: str, query: str, *args: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(dsn, server_settings={"search_path": SCHEMA})
    try:
        return await conn.fetch(query, *args)
    finally:
        await conn.close()


def most_at_once(spans: list[tuple[Any, Any]]) -> int:
    """The most of ``spans`` open at one moment (an end before a start at the same instant)."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    open_now = peak = 0
    for _, step in edges:
        open_now += step
        peak = max(peak, open_now)
    return peak


#: A runtime that waits until its release file exists (``release``, or ``release.<prompt>``
#: for it alone: the test says when), then calls its butler's state_set over MCP at the
#: address it was given, and answers that address.
HELD_RUNTIME = """
import asyncio, json, os, sys, time
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

entry = next(iter(json.load(open(sys.argv[1]))["mcpServers"].values()))
while not (os.path.exists(sys.argv[3]) or os.path.exists(sys.argv[3] + "." + sys.argv[2])):
    time.sleep(0.05)

async def main():
    transport = StreamableHttpTransport(entry["url"], headers=entry.get("headers") or {})
    async with Client(transport) as butler:
        await butler.call_tool("state_set", {"key": sys.argv[2], "value": "called"})

asyncio.run(main())
print(entry["url"])
"""


def held_runtime(roster: Path, release: Path) -> list[str]:
    """The command of :data:`HELD_RUNTIME`, released by creating ``release``."""
    roster.mkdir(parents=True, exist_ok=True)
    script = roster / "held.py"
    script.write_text(HELD_RUNTIME, encoding="utf-8")
    return [sys.executable, str(script), "{mcp_config}", "{prompt}", str(release)]
