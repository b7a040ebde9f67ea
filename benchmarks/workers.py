"""A trigger run by a worker (`butler worker`, through PgQueuer) beside the same trigger run
in the daemon (``workers = "local"``), in the same run; and what one more worker buys.

Two butlers with the same ``command`` runtime (``echo``, jailed as configured), each
its own daemon on the same PostgreSQL: one runs its sessions itself, the other hands
them to one `butler worker` process on this machine. Triggers go one at a time through
one MCP client per daemon, alternating between the two in blocks so that load hits
both alike. The difference is what the engine costs a session: the job's insert and
NOTIFY, the worker's dequeue, its second start of the runtime's preparation, the
result row and its NOTIFY back. The worker is on the same machine, so no network
is in the figure (tests/workers/ run workers in network namespaces; a real link adds
its round trips, a few per session).

Then triggers per second at concurrency 8 (eight MCP clients, each triggering
back to back) against a butler served by 1, 2 and 3 workers (three butlers, so
that no worker is started or stopped between measurements: four workers, the
first serving the first butler alone, the others two and three butlers), and against the
local daemon, in rounds visiting the four in turn, each round starting one
later. Each worker runs at its default capacity (the CPU count: 2 here), so one
more worker is two more sessions at once. All of them share this machine's
cores with the daemons and PostgreSQL: one more worker adds places to run
sessions, not CPU.

    .venv/bin/python benchmarks/workers.py [--triggers 20] [--burst 40] [--rounds 4]
        [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, REPO, drop_schema, median, percentile
from rows import Goal, Row, reference_plus

from tests.helpers import DaemonProcess, butler_client, free_port, write_butler

#: Triggers per block: local and remote blocks alternate.
BLOCK = 5
#: Triggers in flight at once in the throughput rows.
CONCURRENCY = 8
#: Butlers served by that many workers each, in the throughput rows.
FLEETS = {"there": 1, "two": 2, "three": 3}
#: What the worker's trip may add to a trigger's median over the same trigger run in
#: the daemon: the job's insert and NOTIFY, the worker's dequeue and claim, its own
#: preparation of the runtime, the result row and its NOTIFY back, the daemon's
#: completion. About ten round trips to PostgreSQL at ~1 ms and a second preparation
#: of the runtime (~5 ms) on a quiet 2-core machine (measured there: +15 ms), with
#: room for two more processes to be scheduled; small beside a real runtime's start
#: (a CLI and a model call: seconds). A machine whose run queue is several deep per
#: core delays each of those processes' wake-ups, and misses it (docs/scaling.md).
WORKER_MARGIN_MS = 25


def more_than(ref_name: str) -> Goal:
    return Goal(f"> {ref_name}", lambda ours, ref: ours > ref)


def _butler(roster: Path, name: str, workers: str) -> tuple[Path, int, str]:
    port, schema = free_port(), f"bench_{name}_{uuid.uuid4().hex[:8]}"
    runtime = {
        "type": "command",
        "command": ["echo", "hi"],
        "workers": workers,
        # The butler's own limit never holds the eight back: its workers' capacity does.
        "max_concurrent_sessions": CONCURRENCY,
    }
    return write_butler(roster, name, port=port, schema=schema, runtime=runtime), port, schema


async def _triggers(url: str, count: int, into: list[float]) -> None:
    async with butler_client(url, timeout=120) as client:
        for i in range(count):
            started = time.perf_counter()
            result = await client.call_tool("trigger", {"prompt": f"benchmark {i}"})
            if not result.structured_content["success"]:
                raise SystemExit(f"trigger failed: {result.structured_content['error']}")
            into.append((time.perf_counter() - started) * 1000)


async def _burst(url: str, count: int) -> tuple[int, float]:
    """``count`` triggers by :data:`CONCURRENCY` clients, each back to back: how many,
    and the seconds from the first sent to the last answered (clients connected first)."""

    async def share(client: Any, n: int) -> None:
        for i in range(n):
            result = await client.call_tool("trigger", {"prompt": f"burst {i}"})
            if not result.structured_content["success"]:
                raise SystemExit(f"trigger failed: {result.structured_content['error']}")

    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(butler_client(url, timeout=120))
            for _ in range(CONCURRENCY)
        ]
        started = time.perf_counter()
        await asyncio.gather(*(share(c, n) for c, n in zip(clients, shares(count), strict=True)))
        return count, time.perf_counter() - started


async def _throughput(urls: dict[str, str], burst: int, rounds: int) -> dict[str, float]:
    """Triggers per second at :data:`CONCURRENCY` for each butler of ``urls``, in rounds
    that visit every butler in turn, each round from the next one."""
    done = {name: 0 for name in urls}
    took = {name: 0.0 for name in urls}
    for url in urls.values():  # warm-up: the workers' first sessions, not counted
        await _burst(f"{url}/mcp", min(burst, CONCURRENCY))
    names = list(urls)
    for n in range(rounds):
        # Each round starts one butler later: over len(urls) rounds each takes every
        # place in the order once, so a load that drifts within a round hits them alike.
        for name in names[n % len(names) :] + names[: n % len(names)]:
            count, seconds = await _burst(f"{urls[name]}/mcp", burst)
            done[name] += count
            took[name] += seconds
    return {name: done[name] / took[name] for name in urls}


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


def served_by(n: int) -> list[str]:
    """The butlers worker ``n`` (from 0) serves. Worker 0 serves the first butler of
    :data:`FLEETS` alone: the one-at-a-time rows are measured with it and the two
    daemons alone, as before the c=8 rows (a worker serving three butlers, beside six
    more processes, added ~140 ms to the median on this machine). Workers 1 to 3 serve
    the others, each butler by as many as :data:`FLEETS` says (a worker's capacity
    holds per butler, so its other butlers' idle slots cost it nothing)."""
    first, *others = FLEETS
    if n == 0:
        return [first]
    return [name for name in others if FLEETS[name] >= n]


def shares(count: int) -> list[int]:
    """``count`` triggers split as evenly as can be among :data:`CONCURRENCY` clients."""
    return [count // CONCURRENCY + (i < count % CONCURRENCY) for i in range(CONCURRENCY)]


def _worker(tmp: Path, roster: Path, dsn: str, n: int) -> subprocess.Popen[bytes]:
    """Worker ``n``, serving :func:`served_by` ``n``."""
    only = ",".join(served_by(n))
    argv = [sys.executable, "-m", "butler.cli", "worker", "--roster", str(roster)]
    argv += ["--only", only, "--database-url", dsn]
    with (tmp / f"worker-{n}.log").open("w") as log:
        return subprocess.Popen(
            argv,
            cwd=REPO,
            env={**os.environ, "BUTLER_DATA_DIR": str(tmp / f"worker-data-{n}")},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )


async def _all_up(dsn: str, wanted: dict[str, int], timeout: float = 180) -> None:
    """Until every schema of ``wanted`` has as many workers registered as it says (a
    round must not begin while one of a butler's workers is still starting)."""
    deadline = time.monotonic() + timeout
    conn = await asyncpg.connect(dsn)
    try:
        while True:
            counts = [
                await conn.fetchval(f'SELECT count(*) FROM "{schema}".workers') for schema in wanted
            ]
            if all(n >= want for n, want in zip(counts, wanted.values(), strict=True)):
                return
            if time.monotonic() > deadline:
                raise SystemExit(f"workers not all up within {timeout:g} s: {counts}")
            await asyncio.sleep(0.2)
    finally:
        await conn.close()


def measure(dsn: str, triggers: int, tmp: Path, burst: int = 40, rounds: int = 3) -> list[Row]:
    """The remote and local trigger latencies (median and p90), and triggers per second
    at concurrency 8 with 1, 2 and 3 workers and locally, as rows."""
    roster = tmp / "roster"
    env = {"BUTLER_DATA_DIR": str(tmp / "data")}
    butlers = {"here": _butler(roster, "here", "local")}
    butlers |= {name: _butler(roster, name, "remote") for name in FLEETS}
    daemons = {
        name: DaemonProcess(folder, port=port, database_url=dsn, env=env)
        for name, (folder, port, _) in butlers.items()
    }
    workers: list[subprocess.Popen[bytes]] = []
    urls = {name: daemon.url for name, daemon in daemons.items()}
    first, *others = FLEETS
    try:
        # One after the other: side by side, on a loaded machine, each start took four
        # times as long and passed its 60 s bound. A butler's workers start once its
        # daemon has migrated the schema they use.
        daemons["here"].start()
        daemons[first].start()
        workers.append(_worker(tmp, roster, dsn, 0))
        local, remote = asyncio.run(_alternate(urls["here"], urls[first], triggers))
        for name in others:
            daemons[name].start()
        workers += [_worker(tmp, roster, dsn, n) for n in range(1, max(FLEETS.values()) + 1)]
        asyncio.run(_all_up(dsn, {butlers[name][2]: FLEETS[name] for name in others}))
        rates = asyncio.run(_throughput(urls, burst, rounds))
    finally:
        for worker in workers:
            worker.terminate()
        with ThreadPoolExecutor(len(daemons)) as stopping:
            list(stopping.map(DaemonProcess.stop, daemons.values()))
        for worker in workers:
            worker.wait(60)
        for _, _, schema in butlers.values():
            asyncio.run(drop_schema(dsn, schema))
    load = os.getloadavg()[0]
    how = (
        f"{triggers} triggers each, one at a time, local and worker blocks of {BLOCK} "
        f"alternating; a `command` runtime (`echo hi`); the worker on this machine (no "
        f"network in the figure); load {load:.1f} at the end"
    )
    cores = os.cpu_count()
    at_c = (
        f"triggers per second at concurrency {CONCURRENCY} ({CONCURRENCY} MCP clients "
        f"triggering back to back), {rounds} rounds of {burst} triggers per butler, the "
        f"butlers visited in turn, each round from the next; `echo hi`; each worker at its "
        f"default capacity "
        f"({cores}, the CPU count); daemons, workers and PostgreSQL share this machine's "
        f"{cores} cores; load {load:.1f} at the end"
    )
    local_name = 'run in the daemon (workers = "local")'
    return [
        Row(
            "trigger run by a worker (PgQueuer), median",
            median(remote),
            median(local),
            local_name,
            goal=reference_plus(WORKER_MARGIN_MS, "ms"),
            measures=f"median trigger latency through the MCP client: {how}",
        ),
        Row(
            "trigger run by a worker (PgQueuer), p90",
            percentile(remote, 90),
            percentile(local, 90),
            local_name,
            measures=f"90th percentile of the same triggers: {how}",
        ),
        Row(
            f"triggers/s at c={CONCURRENCY}, 1 worker",
            rates[first],
            rates["here"],
            f"c={CONCURRENCY} {local_name}",
            unit="triggers/s",
            measures=f"{at_c}; the daemon runs all 8 at once, one worker {cores}",
        ),
        Row(
            f"triggers/s at c={CONCURRENCY}, 2 workers",
            rates["two"],
            rates[first],
            "1 worker",
            unit="triggers/s",
            goal=more_than("1 worker"),
            measures=f"{at_c}; what a second worker buys",
        ),
        Row(
            f"triggers/s at c={CONCURRENCY}, 3 workers",
            rates["three"],
            rates["two"],
            "2 workers",
            unit="triggers/s",
            measures=f"{at_c}; what a third worker buys (no goal: on {cores} shared cores "
            "it adds places to run, not CPU)",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=20)
    parser.add_argument("--burst", type=int, default=40, help="triggers per butler per round")
    parser.add_argument("--rounds", type=int, default=4, help="4: each butler first once")
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    from rows import table, tally

    print(f"load at the start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as work:
        rows = measure(args.database_url, args.triggers, Path(work), args.burst, args.rounds)
    print(table(rows, verdicts=True))
    met, counted = tally(rows)
    print(f"{met} of {counted} rows with a goal meet it; load at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
