"""Spawner overhead: triggers through a real MCP client into a running daemon.

The runtime is a no-op fake Claude CLI that answers at once, so what is
measured is butler's own cost per session: admission, the session row,
workspace, environment, the SDK handshake, the launcher, and recording. The
floor is launching that same no-op CLI directly, in the same run.

    .venv/bin/python benchmarks/spawner.py [--triggers 40] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from fastmcp import Client

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers import DaemonProcess, free_port, write_butler  # noqa: E402

NOOP_CLI = REPO / "tests" / "runtimes" / "fake_claude.py"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


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


async def run_triggers(url: str, count: int, concurrency: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)

    async def worker() -> None:
        async with Client(url, timeout=120) as client:
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


def report(label: str, latencies: list[float], wall: float) -> None:
    ms = [v * 1000 for v in latencies]
    print(
        f"{label:<16} p50 {percentile(ms, 50):7.1f} ms   p95 {percentile(ms, 95):7.1f} ms   "
        f"{len(ms) / wall:6.1f} triggers/s"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=40)
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()

    floor = [await floor_once() for _ in range(args.triggers)]
    report("floor (direct)", floor, sum(floor))

    with tempfile.TemporaryDirectory() as tmp:
        roster = Path(tmp) / "roster"
        port = free_port()
        folder = write_butler(
            roster,
            "bench",
            port=port,
            schema=f"bench_{port}",
            runtime={"cli_path": str(NOOP_CLI), "max_concurrent_sessions": 8},
        )
        env = {"ANTHROPIC_API_KEY": "sk-bench", "BUTLER_DATA_DIR": str(Path(tmp) / "data")}
        with DaemonProcess(folder, port=port, database_url=args.database_url, env=env) as daemon:
            url = f"{daemon.url}/mcp"
            await run_triggers(url, 3, 1)  # warm up imports and the pool
            results = {}
            for concurrency in (1, 8):
                latencies, wall = await run_triggers(url, args.triggers, concurrency)
                report(f"trigger c={concurrency}", latencies, wall)
                results[concurrency] = latencies
    ratio = statistics.median(results[1]) / statistics.median(floor)
    print(f"overhead ratio (trigger c=1 p50 / floor p50): {ratio:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
