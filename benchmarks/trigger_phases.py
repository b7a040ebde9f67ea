"""Where a trigger's time goes: its steps timed inside the daemon, beside the direct floor.

One daemon (jailed, the no-op Claude CLI) with ``benchmarks/phases`` on its
``PYTHONPATH``, whose ``sitecustomize`` times the session path's steps; one
client calls ``trigger`` one at a time, each call followed by a direct run of
the same CLI (the floor). Printed: each step's median start, duration and end,
in ms from the client's call (all processes read the same monotonic clock).
``--pool 0`` times the path without warm jails.

    .venv/bin/python benchmarks/trigger_phases.py [--triggers 30] [--pool N]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, NOOP_CLI, drop_schema
from spawner import sdk_direct

from tests.helpers import DaemonProcess, butler_client, free_port, write_butler

HERE = Path(__file__).resolve().parent
WARM_UP = 3


async def measure(count: int, pool: str | None, tmp: Path) -> tuple[list, list, list]:
    port, out = free_port(), tmp / "phases.jsonl"
    folder = write_butler(
        tmp / "roster",
        "bench",
        port=port,
        schema=f"bench_{port}",
        runtime={"cli_path": str(NOOP_CLI), "max_concurrent_sessions": 8},
    )
    env = {
        "ANTHROPIC_API_KEY": "sk-bench",
        "BUTLER_DATA_DIR": str(tmp / "data"),
        "PYTHONPATH": str(HERE / "phases"),
        "BUTLER_PHASES": str(out),
        **({"BUTLER_JAIL_POOL": pool} if pool is not None else {}),
    }
    calls, floor = [], []
    try:
        with DaemonProcess(folder, port=port, database_url=DEFAULT_DSN, env=env) as daemon:
            async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                for i in range(count + WARM_UP):
                    start = time.perf_counter()
                    result = await client.call_tool("trigger", {"prompt": f"phases {i}"})
                    calls.append((start, time.perf_counter()))
                    if not result.structured_content["success"]:
                        raise SystemExit(result.structured_content["error"])
                    start = time.perf_counter()
                    await sdk_direct(i)
                    floor.append((time.perf_counter() - start) * 1000)
    finally:
        await drop_schema(DEFAULT_DSN, f"bench_{port}")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return calls[WARM_UP:], floor[WARM_UP:], rows[WARM_UP:]


def report(calls: list, floor: list, rows: list) -> None:
    steps: dict[str, list[tuple[float, float, float]]] = {}
    for (called, answered), events in zip(calls, rows, strict=True):
        seen = set()
        for name, start, end in events:
            if name not in seen:
                seen.add(name)
                steps.setdefault(name, []).append(
                    ((start - called) * 1000, (end - start) * 1000, (end - called) * 1000)
                )
        steps.setdefault("the client's call", []).append((0, 0, (answered - called) * 1000))
    med = statistics.median
    total = med([s[2] for s in steps["the client's call"]])
    print(f"{len(rows)} triggers: p50 {total:.1f} ms; the direct floor p50 {med(floor):.1f} ms")
    print(f"{'step':44s} {'start':>7s} {'takes':>7s} {'end':>7s}   (ms from the call, medians)")
    for name, values in sorted(steps.items(), key=lambda kv: med([v[0] for v in kv[1]])):
        start, takes, end = (med([v[k] for v in values]) for k in range(3))
        print(f"{name:44s} {start:7.1f} {takes:7.1f} {end:7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=30)
    parser.add_argument("--pool", default=None, help="BUTLER_JAIL_POOL for the daemon")
    args = parser.parse_args()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    with tempfile.TemporaryDirectory() as tmp:
        found = asyncio.run(measure(args.triggers, args.pool, Path(tmp)))
    print(f"load average before: {load}")
    report(*found)


if __name__ == "__main__":
    main()
