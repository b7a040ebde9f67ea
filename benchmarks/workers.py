"""A trigger run by a worker (`butler worker`, through PgQueuer) beside the same trigger run
in the daemon (``workers = "local"``), in the same run.

Two butlers with the same ``command`` runtime (``echo``, jailed as configured), each
its own daemon on the same PostgreSQL: one runs its sessions itself, the other hands
them to one `butler worker` process on this machine. Triggers go one at a time through
one MCP client per daemon, alternating between the two in blocks so that load hits
both alike. The difference is what the engine costs a session: the job's insert and
NOTIFY, the worker's dequeue, its second start of the runtime's preparation, the
result row and its NOTIFY back. The worker is on the same machine, so no network
is in the figure (tests/workers/ run workers in network namespaces; a real link adds
its round trips, a few per session).

    .venv/bin/python benchmarks/workers.py [--triggers 20] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, REPO, drop_schema, median, percentile
from rows import Row, reference_plus

from tests.helpers import DaemonProcess, butler_client, free_port, write_butler

#: Triggers per block: local and remote blocks alternate.
BLOCK = 5


def _butler(roster: Path, name: str, workers: str) -> tuple[Path, int, str]:
    port, schema = free_port(), f"bench_{name}_{uuid.uuid4().hex[:8]}"
    runtime = {"type": "command", "command": ["echo", "hi"], "workers": workers}
    return write_butler(roster, name, port=port, schema=schema, runtime=runtime), port, schema


async def _triggers(url: str, count: int, into: list[float]) -> None:
    async with butler_client(url, timeout=120) as client:
        for i in range(count):
            started = time.perf_counter()
            result = await client.call_tool("trigger", {"prompt": f"benchmark {i}"})
            if not result.structured_content["success"]:
                raise SystemExit(f"trigger failed: {result.structured_content['error']}")
            into.append((time.perf_counter() - started) * 1000)


async def _alternate(here: str, there: str, triggers: int) -> tuple[list[float], list[float]]:
    """Latencies (ms) of ``triggers`` triggers to each daemon, in alternating blocks."""
    local: list[float] = []
    remote: list[float] = []
    # One warm-up each (a first session pays imports and connections), not counted.
    await _triggers(f"{here}/mcp", 1, [])
    await _triggers(f"{there}/mcp", 1, [])
    done = 0
    while done < triggers:
        block = min(BLOCK, triggers - done)
        await _triggers(f"{here}/mcp", block, local)
        await _triggers(f"{there}/mcp", block, remote)
        done += block
    return local, remote


def measure(dsn: str, triggers: int, tmp: Path) -> list[Row]:
    """The remote and local trigger latencies (median and p90) as rows."""
    roster = tmp / "roster"
    env = {"BUTLER_DATA_DIR": str(tmp / "data")}
    local_dir, local_port, local_schema = _butler(roster, "here", "local")
    remote_dir, remote_port, remote_schema = _butler(roster, "there", "remote")
    here = DaemonProcess(local_dir, port=local_port, database_url=dsn, env=env).start()
    there = DaemonProcess(remote_dir, port=remote_port, database_url=dsn, env=env).start()
    argv = [sys.executable, "-m", "butler.cli", "worker", "--roster", str(roster)]
    argv += ["--only", "there", "--database-url", dsn]
    with (tmp / "worker.log").open("w") as log:
        worker = subprocess.Popen(
            argv,
            cwd=REPO,
            env={**os.environ, "BUTLER_DATA_DIR": str(tmp / "worker-data")},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    try:
        local, remote = asyncio.run(_alternate(here.url, there.url, triggers))
    finally:
        worker.terminate()
        worker.wait(60)
        here.stop()
        there.stop()
        for schema in (local_schema, remote_schema):
            asyncio.run(drop_schema(dsn, schema))
    load = os.getloadavg()[0]
    how = (
        f"{triggers} triggers each, one at a time, local and worker blocks of {BLOCK} "
        f"alternating; a `command` runtime (`echo hi`); the worker on this machine (no "
        f"network in the figure); load {load:.1f} at the end"
    )
    return [
        Row(
            "trigger run by a worker (PgQueuer), median",
            median(remote),
            median(local),
            'run in the daemon (workers = "local")',
            goal=reference_plus(100, "ms"),
            measures=f"median trigger latency through the MCP client: {how}",
        ),
        Row(
            "trigger run by a worker (PgQueuer), p90",
            percentile(remote, 90),
            percentile(local, 90),
            'run in the daemon (workers = "local")',
            measures=f"90th percentile of the same triggers: {how}",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=20)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    from rows import table

    print(f"load at the start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as work:
        rows = measure(args.database_url, args.triggers, Path(work))
    print(table(rows, verdicts=False))


if __name__ == "__main__":
    main()
