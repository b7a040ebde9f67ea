"""What warm jails save a trigger: two daemons, one without a pool, one with, interleaved.

The same butler twice (``BUTLER_JAIL_POOL=0``, the default, and ``=2``), jailed, its
runtime the no-op Claude CLI (``tests/runtimes/fake_claude.py``); blocks of
triggers one at a time go to each in turn, with the no-op CLI started directly
(the goals' floor) between them, then pools of 8 clients the same way. Each
figure's ratio is to the floor measured in the same blocks.

    .venv/bin/python benchmarks/warm_jails.py [--triggers 40] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, NOOP_CLI, drop_schema
from cpu import Clocks
from spawner import Series, direct, sdk_direct, triggering

from tests.helpers import DaemonProcess, free_port, write_butler

KINDS = {"no pool": "0", "warm jails": "2"}


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def measure(dsn: str, triggers: int, tmp: Path) -> None:
    schemas: list[str] = []
    urls: dict[str, str] = {}
    pids: dict[str, int] = {}
    with contextlib.ExitStack() as stack:
        for kind, size in KINDS.items():
            port = free_port()
            schemas.append(f"bench_{port}")
            folder = write_butler(
                tmp / size,
                "bench",
                port=port,
                schema=schemas[-1],
                runtime={"cli_path": str(NOOP_CLI), "max_concurrent_sessions": 8},
            )
            env = {
                "ANTHROPIC_API_KEY": "sk-bench",
                "BUTLER_DATA_DIR": str(tmp / size / "data"),
                "BUTLER_JAIL_POOL": size,
            }
            daemon = stack.enter_context(
                DaemonProcess(folder, port=port, database_url=dsn, env=env)
            )
            urls[kind], pids[kind] = f"{daemon.url}/mcp", daemon.proc.pid  # type: ignore[union-attr]
        try:
            await _compare(urls, pids, triggers)
        finally:
            for schema in schemas:
                await drop_schema(dsn, schema)


async def _compare(urls: dict[str, str], pids: dict[str, int], triggers: int) -> None:
    print(f"load before: {_load()}")
    for url in urls.values():
        await Series().block(triggering(url), 3, 1, Clocks.read)  # warm up, fill the pool
    await Series().block(direct(sdk_direct), 3, 1, Clocks.read)
    one = {kind: Series() for kind in [*urls, "floor"]}
    rounds = max(1, triggers // 10)
    for _ in range(rounds):
        for kind, url in urls.items():
            pid = pids[kind]
            await one[kind].block(
                triggering(url), triggers // rounds, 1, lambda p=pid: Clocks.read(p)
            )
        await one["floor"].block(direct(sdk_direct), triggers // rounds, 1, Clocks.read)
    eight = {kind: Series() for kind in [*urls, "floor"]}
    for _ in range(2):
        for kind, url in urls.items():
            await eight[kind].block(triggering(url), triggers, 8, Clocks.read)
        await eight["floor"].block(direct(sdk_direct), triggers, 8, Clocks.read)
    floor1, floor8 = one["floor"], eight["floor"]
    print(f"load after: {_load()}")
    heads = ("p50 ms", "x floor", "p95 ms", "x floor", "/s c=8", "x floor", "CPU ms", "accounted")
    print(f"{'':12s}" + "".join(f" {h:>9s}" for h in heads))
    for kind in one:
        a, b = one[kind], eight[kind]
        figures = (
            a.ms(50),
            a.ms(50) / floor1.ms(50),
            a.ms(95),
            a.ms(95) / floor1.ms(95),
            b.rate(),
            b.rate() / floor8.rate(),
            a.per_item_ms("machine_less_client"),
            a.per_item_ms("accounted"),
        )
        print(f"{kind:12s}" + "".join(f" {f:9.2f}" for f in figures))
    print("CPU ms: machine-wide less the client, per trigger at c=1 (exact only when quiet);")
    print("accounted: the daemon's own and its reaped children's, kernel threads' and interrupts'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=40)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    os.environ.pop("BUTLER_JAIL_POOL", None)
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(measure(args.database_url, args.triggers, Path(tmp)))


if __name__ == "__main__":
    main()
