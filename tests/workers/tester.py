"""Butler ``tester`` with its sessions on a worker "machine" (a network namespace joined
by a veth link, tests/workers/machines.py): its folder, its daemon listening on the
link, its worker, and what they wrote. Shared by the worker tests."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

from butler.store.db import Database, quote_ident
from butler.store.session_jobs import ENTRYPOINT
from butler.store.worker_role import init_role, worker_url
from tests.helpers import DaemonProcess
from tests.workers.fleet import start_worker
from tests.workers.machines import Machine

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


def link_butler(
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


class LinkDaemon(DaemonProcess):
    """The daemon bound to its end of the link (not loopback)."""

    def __init__(self, *args, host: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.host = host

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def link_worker(
    place: Machine,
    roster: Path,
    dsn: str,
    data: Path,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> subprocess.Popen[str]:
    """``butler worker`` for the butler ``tester``, at its default capacity."""
    return start_worker(place, roster, dsn, data, only="tester", capacity=None, env=env, args=args)


def worker_log(data: Path) -> str:
    """What the worker started with ``data`` has written so far."""
    return (data / "worker.log").read_text(errors="replace")


def output_of(worker: subprocess.Popen[str], data: Path, timeout: float = 60) -> str:
    """What the worker started with ``data`` wrote, once it has ended."""
    worker.wait(timeout)
    return (data / "worker.log").read_text()


async def picked_by(dsn: str) -> str | None:
    """The worker that picked the newest session, once one did."""
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(
            "SELECT metadata->>'worker' FROM workers_test.sessions ORDER BY created_at DESC LIMIT 1"
        )
    finally:
        await conn.close()


PROBE = Path(__file__).with_name("jail_probe.py")
#: The probe in the butler's folder (which the jail shows), on the system's Python.
PROBE_COMMAND = [
    "/usr/bin/python3",
    "-I",
    "{cwd}/jail_probe.py",
    "{prompt_file}",
    "{mcp_config}",
    "{system_prompt_file}",
]


def probe_butler(roster: Path, host: str, port: int, extra: str = "") -> Path:
    folder = link_butler(roster, host, port, PROBE_COMMAND, extra)
    shutil.copy(PROBE, folder / "jail_probe.py")
    return folder


async def picked_job(db: Database, session_id: str) -> int:
    """A job naming the session, picked as a worker's dequeue picks it (a claim is taken
    only for a session a picked job names); its id."""
    return await db.fetchval(
        "INSERT INTO pgqueuer (priority, status, entrypoint, payload)"
        " VALUES (0, 'picked', $1, $2) RETURNING id",
        ENTRYPOINT,
        json.dumps({"session": {"id": session_id}}).encode(),
    )


@asynccontextmanager
async def worker_role(db: Database) -> AsyncIterator[str]:
    """The URL of a worker's own role for ``db``'s schema, made as ``butler worker
    --init-role`` makes it (the suite's server trusts local connections, so the password
    is not checked: what is tested is what the role is granted); dropped after."""
    name = f"worker_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(db.dsn)
    try:
        made = await init_role(conn, name, [db.schema])
        yield worker_url(db.dsn, name, made.password)
    finally:
        await conn.execute(f"DROP OWNED BY {quote_ident(name)}")
        await conn.execute(f"DROP ROLE {quote_ident(name)}")
        await conn.close()


@asynccontextmanager
async def as_role(url: str, schema: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection with ``url`` (a worker role's), in ``schema``."""
    conn = await asyncpg.connect(url, server_settings={"search_path": quote_ident(schema)})
    try:
        yield conn
    finally:
        await conn.close()
