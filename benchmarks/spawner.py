"""Spawner overhead: triggers through a real MCP client into a running daemon.

The runtime is a no-op fake Claude CLI that answers at once, so what is
measured is butler's own cost per session: admission, the session row,
workspace, environment, the SDK handshake, the launcher, and recording. The
floor is launching that same no-op CLI directly, in the same run, one at a
time and eight at a time. CPU per trigger is the daemon's own and its reaped
children's (``/proc/<pid>/stat``), against the floor's children (``getrusage``).
Memory: the daemon's RSS when idle and after a burst of triggers.

    .venv/bin/python benchmarks/spawner.py [--triggers 40] [--burst 1000] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, NOOP_CLI, drop_schema, median, percentile, proc_cpu_s, rss_mb

from tests.helpers import DaemonProcess, butler_client, free_port, write_butler

Row = tuple[str, float, float, str]


async def floor_once() -> float:
    """Launch the no-op CLI directly and speak the same protocol to it."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as cwd:
        proc = await asyncio.create_subprocess_exec(
            str(NOOP_CLI),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=cwd,
        )
        request = {"type": "control_request", "request_id": "r1", "request": {}}
        user = {"type": "user", "message": {"role": "user", "content": "hi"}}
        payload = (json.dumps(request) + "\n" + json.dumps(user) + "\n").encode()
        await proc.communicate(payload)
    return time.perf_counter() - started


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def run_floor(count: int, concurrency: int) -> tuple[list[float], float, float]:
    """Latencies, wall time and CPU per run of the direct floor."""
    cpu = children_cpu_s()
    wall = time.perf_counter()
    latencies: list[float] = []
    for start in range(0, count, concurrency):
        batch = min(concurrency, count - start)
        latencies += await asyncio.gather(*(floor_once() for _ in range(batch)))
    return latencies, time.perf_counter() - wall, (children_cpu_s() - cpu) / count


async def run_triggers(url: str, count: int, concurrency: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)

    async def worker() -> None:
        async with butler_client(url, timeout=120) as client:
            while not queue.empty():
                i = queue.get_nowait()
                started = time.perf_counter()
                result = await client.call_tool("trigger", {"prompt": f"benchmark {i}"})
                latencies.append(time.perf_counter() - started)
                if not result.structured_content["success"]:
                    raise SystemExit(f"trigger failed: {result.structured_content['error']}")

    wall = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, time.perf_counter() - wall


def daemon_cpu_s(pid: int) -> float:
    own, children = proc_cpu_s(pid)
    return own + children


async def measure(dsn: str, triggers: int, burst: int, tmp: Path) -> list[Row]:
    """Every trigger row: (label, butler figure, reference figure, reference name)."""
    floor1, _, floor_cpu = await run_floor(triggers, 1)
    _, floor8_wall, _ = await run_floor(triggers, 8)
    port = free_port()
    folder = write_butler(
        tmp / "roster",
        "bench",
        port=port,
        schema=f"bench_{port}",
        runtime={"cli_path": str(NOOP_CLI), "max_concurrent_sessions": 8},
    )
    env = {"ANTHROPIC_API_KEY": "sk-bench", "BUTLER_DATA_DIR": str(tmp / "data")}
    try:
        return await _daemon_rows(
            folder, port, dsn, env, triggers, burst, (floor1, floor8_wall, floor_cpu)
        )
    finally:
        await drop_schema(dsn, f"bench_{port}")


async def _daemon_rows(
    folder: Path,
    port: int,
    dsn: str,
    env: dict[str, str],
    triggers: int,
    burst: int,
    floor: tuple[list[float], float, float],
) -> list[Row]:
    floor1, floor8_wall, floor_cpu = floor
    with DaemonProcess(folder, port=port, database_url=dsn, env=env) as daemon:
        assert daemon.proc is not None
        pid = daemon.proc.pid
        url = f"{daemon.url}/mcp"
        await run_triggers(url, 3, 1)  # warm up imports and the pool
        idle = rss_mb(pid)
        cpu = daemon_cpu_s(pid)
        one, _ = await run_triggers(url, triggers, 1)
        cpu_per = (daemon_cpu_s(pid) - cpu) / triggers
        eight, eight_wall = await run_triggers(url, triggers, 8)
        await run_triggers(url, max(0, burst - 2 * triggers), 8)
        after = rss_mb(pid)
    ms = [v * 1000 for v in one]
    floor_ms = [v * 1000 for v in floor1]
    return [
        ("trigger p50, c=1", median(ms), median(floor_ms), "no-op CLI direct"),
        ("trigger p95, c=1", percentile(ms, 95), percentile(floor_ms, 95), "no-op CLI direct"),
        (
            "triggers/s, c=8",
            len(eight) / eight_wall,
            triggers / floor8_wall,
            "no-op CLI 8 at a time",
        ),
        ("CPU ms per trigger (all processes)", cpu_per * 1000, floor_cpu * 1000, "no-op CLI"),
        (f"RSS MB after {burst} triggers", after, idle, "idle after warm-up"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=40)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = asyncio.run(measure(args.database_url, args.triggers, args.burst, Path(tmp)))
    for label, ours, ref, name in rows:
        print(f"{label:<36} {ours:8.1f}   {name}: {ref:8.1f}   {ours / ref:5.2f}x")


if __name__ == "__main__":
    main()
