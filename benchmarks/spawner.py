"""Triggers through a real MCP client into a running daemon, beside the no-op CLI run directly.

The runtime is a no-op fake Claude CLI (``tests/runtimes/fake_claude.py``,
the SDK's stream-json protocol on stdin) that answers at once, so a
trigger's figure is butler's own cost per session: admission, the session
row, workspace, environment, the jail, the SDK handshake and recording. The
daemon runs as configured by default: a jail started per session, no warm
jails (``benchmarks/warm_jails.py`` compares the two; ``BUTLER_JAIL_POOL=2``
in this process's environment turns them on).

Three floors, each run in the same process as the client, interleaved with
the triggers in blocks so that load hits all alike:

- the jailed floor (``benchmarks/jailed_floor.py``): the same no-op CLI
  launched through bubblewrap with the session's policy (namespaces, mounts,
  seccomp filter, egress socket) by a minimal program and nothing else: what a
  jailed trigger must cost at least, the reference of every goal below;
- the same no-op CLI started directly and spoken to with the same protocol
  (what the jail itself costs, beside the jailed floor);
- a no-op CLI in print mode (``benchmarks/noop_print_cli.py``: the prompt
  on the command line, stream-json out, the predecessor's shape), which
  shows what the SDK's protocol itself costs.

Eight at a time, butler and both floors run as a pool of eight workers over
one queue of work, none waiting for the others (no batches, no barrier).

CPU per trigger is counted two ways (see ``benchmarks/cpu.py``):
machine-wide busy time less the client's own, and what is accounted to
processes of ours (the daemon, its reaped descendants, its PostgreSQL
backends) plus kernel threads and interrupts. Memory: the daemon's RSS
after a burst of triggers against its RSS at start, before any call.

    .venv/bin/python benchmarks/spawner.py [--triggers 40] [--burst 200] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, NOOP_CLI, drop_schema, percentile, rss_mb
from cpu import Clocks, adopt_orphans, backend_pids
from jailed_floor import JailedFloor, floor_for
from rows import Row, ratio_at_least, reference_plus

from tests.helpers import DaemonProcess, butler_client, free_port, write_butler

PRINT_CLI = Path(__file__).resolve().parent / "noop_print_cli.py"
#: A worker of a pool: set up once (a client), then called once per item of work.
Worker = Callable[[], AsyncIterator[Callable[[int], Awaitable[None]]]]


async def sdk_direct(i: int) -> None:
    """The no-op CLI started directly and spoken to as claude-agent-sdk speaks to it."""
    with tempfile.TemporaryDirectory() as cwd:
        proc = await asyncio.create_subprocess_exec(
            str(NOOP_CLI), stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=cwd
        )
        request = {"type": "control_request", "request_id": "r1", "request": {}}
        user = {"type": "user", "message": {"role": "user", "content": f"direct {i}"}}
        payload = (json.dumps(request) + "\n" + json.dumps(user) + "\n").encode()
        out, _ = await proc.communicate(payload)
    if b'"result"' not in out:
        raise SystemExit("the no-op CLI gave no result line")


async def print_direct(i: int) -> None:
    """The print-mode no-op CLI, started as the predecessor starts ``claude -p``."""
    with tempfile.TemporaryDirectory() as cwd:
        argv = [str(PRINT_CLI), "-p", "--output-format", "stream-json", f"direct {i}"]
        proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, cwd=cwd)
        out, _ = await proc.communicate()
    if b'"result"' not in out:
        raise SystemExit("the print-mode no-op CLI gave no result line")


def direct(run: Callable[[int], Awaitable[None]]) -> Worker:
    @asynccontextmanager
    async def worker() -> AsyncIterator[Callable[[int], Awaitable[None]]]:
        yield run

    return worker


def triggering(url: str) -> Worker:
    @asynccontextmanager
    async def worker() -> AsyncIterator[Callable[[int], Awaitable[None]]]:
        async with butler_client(url, timeout=120) as client:

            async def trigger(i: int) -> None:
                result = await client.call_tool("trigger", {"prompt": f"benchmark {i}"})
                if not result.structured_content["success"]:
                    raise SystemExit(f"trigger failed: {result.structured_content['error']}")

            yield trigger

    return worker


async def pool(worker: Worker, count: int, concurrency: int) -> tuple[list[float], float]:
    """Latencies of ``count`` items run by ``concurrency`` workers over one queue, and the wall.

    Each worker takes the next item as soon as its last is done: no batches, no barrier.
    Workers are set up (a client connected) before the clock starts.
    """
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)
    latencies: list[float] = []
    ready = asyncio.Event()
    waiting = [concurrency]

    async def one() -> None:
        async with worker() as run:
            waiting[0] -= 1
            if not waiting[0]:
                ready.set()
            await ready.wait()
            while not queue.empty():
                i = queue.get_nowait()
                started = time.perf_counter()
                await run(i)
                latencies.append(time.perf_counter() - started)

    tasks = [asyncio.create_task(one()) for _ in range(concurrency)]
    await ready.wait()
    wall = time.perf_counter()
    await asyncio.gather(*tasks)
    return latencies, time.perf_counter() - wall


@dataclass
class Series:
    """One kind of run (triggers, or a floor): its latencies, walls and clocks, block by block."""

    latencies: list[float] = field(default_factory=list)
    count: int = 0
    wall: float = 0.0
    cpu: Clocks = field(default_factory=lambda: Clocks(0, 0, 0, 0))

    async def block(
        self, worker: Worker, count: int, concurrency: int, clocks: Callable[[], Clocks]
    ) -> None:
        before = clocks()
        latencies, wall = await pool(worker, count, concurrency)
        spent = clocks() - before
        self.latencies += latencies
        self.count += count
        self.wall += wall
        self.cpu = Clocks(
            *(a + b for a, b in zip(vars(self.cpu).values(), vars(spent).values(), strict=True))
        )

    def ms(self, p: float) -> float:
        return percentile(self.latencies, p) * 1000

    def rate(self) -> float:
        return self.count / self.wall

    def per_item_ms(self, figure: str) -> float:
        return getattr(self.cpu, figure) / self.count * 1000


async def measure(dsn: str, triggers: int, burst: int, tmp: Path) -> list[Row]:
    """Every trigger row, each beside its floor from the same run."""
    adopt_orphans()  # before the daemon starts: any jail orphaned out of it comes here
    port = free_port()
    folder = write_butler(
        tmp / "roster",
        "bench",
        port=port,
        schema=f"bench_{port}",
        runtime={"cli_path": str(NOOP_CLI), "max_concurrent_sessions": 8},
    )
    env = {"ANTHROPIC_API_KEY": "sk-bench", "BUTLER_DATA_DIR": str(tmp / "data")}
    floor = floor_for(folder, tmp)
    try:
        with DaemonProcess(folder, port=port, database_url=dsn, env=env) as daemon:
            assert daemon.proc is not None
            url = f"{daemon.url}/mcp"
            return await _rows(daemon.proc.pid, url, dsn, triggers, burst, floor)
    finally:
        await drop_schema(dsn, f"bench_{port}")


async def _rows(
    pid: int, url: str, dsn: str, triggers: int, burst: int, floor: JailedFloor
) -> list[Row]:
    idle_start = rss_mb(pid)
    await pool(triggering(url), 3, 1)  # warm up: imports, the pool, the page cache
    await pool(direct(sdk_direct), 3, 1)
    await pool(direct(print_direct), 3, 1)
    await pool(direct(floor.launch), 3, 1)
    idle_warm = rss_mb(pid)
    backends = await backend_pids(dsn, pid)

    def daemon_clocks() -> Clocks:
        return Clocks.read(pid, backends)

    one, sdk1, print1, jail1 = Series(), Series(), Series(), Series()
    rounds = max(1, triggers // 10)
    for r in range(rounds):  # interleaved blocks: load hits all four alike
        size = triggers // rounds + (r < triggers % rounds)
        await one.block(triggering(url), size, 1, daemon_clocks)
        backends[:] = await backend_pids(dsn, pid)
        await jail1.block(direct(floor.launch), size, 1, Clocks.read)
        await sdk1.block(direct(sdk_direct), size, 1, Clocks.read)
        await print1.block(direct(print_direct), size, 1, Clocks.read)
    eight, sdk8, print8, jail8 = Series(), Series(), Series(), Series()
    for _ in range(2):
        await eight.block(triggering(url), triggers, 8, daemon_clocks)
        await jail8.block(direct(floor.launch), triggers, 8, Clocks.read)
        await sdk8.block(direct(sdk_direct), triggers, 8, Clocks.read)
        await print8.block(direct(print_direct), triggers, 8, Clocks.read)
    rest = max(0, burst - one.count - eight.count - 3)
    await pool(triggering(url), rest, 8)
    after = rss_mb(pid)
    done = 3 + one.count + eight.count + rest
    floor, shape = "no-op CLI direct", "print-mode no-op CLI direct"
    jailed = "no-op CLI jailed (jailed floor)"
    same = "interleaved in blocks of the same size"
    return [
        Row(
            "trigger p50, c=1",
            one.ms(50),
            jail1.ms(50),
            jailed,
            goal=reference_plus(10, "ms"),
            measures=f"median of {one.count} triggers one at a time (MCP call to result), "
            "against the same no-op CLI launched by a minimal program through bubblewrap "
            "with the session's policy (namespaces, mounts, seccomp filter, egress socket; "
            f"benchmarks/jailed_floor.py) and spoken to with the SDK's protocol, {same}",
        ),
        Row(
            "trigger p95, c=1",
            one.ms(95),
            jail1.ms(95),
            jailed,
            goal=reference_plus(20, "ms"),
            measures="95th percentile of the same runs",
        ),
        Row(
            "triggers/s, c=8",
            eight.rate(),
            jail8.rate(),
            "no-op CLI jailed, pool of 8",
            unit="/s",
            goal=ratio_at_least(0.8),
            measures=f"{eight.count} triggers by 8 clients over one queue, no barrier, against "
            f"{jail8.count} jailed-floor launches by 8 workers the same way, {same}",
        ),
        Row(
            "CPU ms per trigger, machine-wide",
            one.per_item_ms("machine_less_client"),
            jail1.per_item_ms("machine_less_client"),
            jailed,
            goal=reference_plus(10, "ms"),
            measures="busy time of every core (/proc/stat) less the measuring client's own, "
            "per trigger at c=1 and per jailed-floor launch (whose launching process is the "
            "client: its share, the egress socket's and the spawn's, is left out of the "
            "floor); includes the machine's other work, so exact only on a quiet machine",
        ),
        Row(
            "CPU ms per trigger, accounted, against the jailed floor",
            one.per_item_ms("accounted"),
            jail1.per_item_ms("accounted"),
            jailed,
            measures="what the machine's load does not reach: the daemon's own and reaped "
            "descendants' CPU, its PostgreSQL backends', kernel threads' and interrupts', "
            "against the jailed floor's reaped children (bubblewrap, the CLI), kernel threads' "
            "and interrupts' (its egress socket, in the client, left out)",
        ),
        Row(
            "trigger p50, c=1, unjailed floor",
            one.ms(50),
            sdk1.ms(50),
            floor,
            measures="the same triggers against the same no-op CLI started directly (no "
            "jail): the jailed floor's gap to it is what the jail itself costs",
        ),
        Row(
            "jailed floor p50, c=1, against the unjailed floor",
            jail1.ms(50),
            sdk1.ms(50),
            floor,
            measures="what a session's jail costs a launch on its own: the jailed floor "
            "against the same CLI started directly, in the same blocks",
        ),
        Row(
            "trigger p50, c=1, print-mode floor",
            one.ms(50),
            print1.ms(50),
            shape,
            measures="the same triggers against a no-op CLI in print mode (prompt in argv, "
            "the predecessor's shape): the floor's gap to it is the SDK protocol's own cost",
        ),
        Row(
            "triggers/s, c=8, unjailed floor",
            eight.rate(),
            sdk8.rate(),
            "no-op CLI direct, pool of 8",
            unit="/s",
            measures=f"the same triggers against {sdk8.count} direct launches by 8 workers",
        ),
        Row(
            "triggers/s, c=8, print-mode floor",
            eight.rate(),
            print8.rate(),
            "print-mode no-op CLI, pool of 8",
            unit="/s",
            measures="the same triggers against the print-mode no-op CLI, a pool of 8",
        ),
        Row(
            "CPU ms per trigger, machine-wide, unjailed floor",
            one.per_item_ms("machine_less_client"),
            sdk1.per_item_ms("machine_less_client"),
            floor,
            measures="the same CPU per trigger against the direct launch's",
        ),
        Row(
            "CPU ms per trigger, accounted",
            one.per_item_ms("accounted"),
            sdk1.per_item_ms("accounted"),
            floor,
            measures="the daemon's own and reaped descendants' CPU (the jails among them), "
            "jailed processes orphaned out of it (adopted), its PostgreSQL backends', "
            "kernel threads' and interrupts' (the floor: its reaped children's, kernel "
            "threads' and interrupts')",
        ),
        Row(
            "  of which the database",
            one.per_item_ms("database"),
            one.per_item_ms("accounted"),
            "accounted per trigger",
            measures="the daemon's PostgreSQL backends' CPU per trigger (a backend that closed "
            "during a block is not counted)",
        ),
        Row(
            "  of which kernel threads and interrupts",
            one.per_item_ms("kernel"),
            sdk1.per_item_ms("kernel"),
            floor,
            measures="kernel threads' CPU (namespace teardown runs in kworkers) and interrupt "
            "time, machine-wide",
        ),
        Row(
            "  of which jailed processes orphaned out of the daemon's reach",
            one.per_item_ms("children"),
            sdk1.per_item_ms("children"),
            floor,
            measures="CPU of jailed processes that escaped the daemon's accounting (orphaned "
            "out of it: the benchmark is the daemon's subreaper and reaps them; 0 when each "
            "jail is reaped up the chain, its CPU then in the daemon's figure), against the "
            "floor's whole CPU, its children",
        ),
        Row(
            "CPU ms per trigger charged to nothing of ours",
            one.per_item_ms("machine_less_client") - one.per_item_ms("accounted"),
            sdk1.per_item_ms("machine_less_client") - sdk1.per_item_ms("accounted"),
            floor,
            measures="machine-wide less accounted: everyone else's work on a busy machine "
            "(the floor's figure shows that part), and anything else no clock above holds",
        ),
        Row(
            f"RSS MB after {done} triggers",
            after,
            idle_start,
            "idle at start, before any call",
            unit="MB",
            goal=reference_plus(20, "MB"),
            measures=f"the daemon's VmRSS after {done} triggers against its VmRSS right after "
            f"/health answered; after 3 warm-up triggers it was {idle_warm:.1f} MB",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=40)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = asyncio.run(measure(args.database_url, args.triggers, args.burst, Path(tmp)))
    from rows import table

    print(table(found, verdicts=True))


if __name__ == "__main__":
    main()
