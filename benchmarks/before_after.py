"""A change's before and after in one run: two trees of butler, the same triggers, interleaved.

Two daemons, one started from this checkout and one from ``--baseline`` (another
tree of the project, e.g. ``git archive <commit> | tar -x -C /tmp/before``, with
``butler/sandbox/bin`` copied in), each jailed with the no-op Claude CLI, on
the same PostgreSQL server, each its own schema. Triggers go one at a time to
each in turn, in blocks, so the machine's load falls on both alike. Printed
for each: latency p50 and p95; CPU per trigger of the daemon and everything
it reaped (the jails, the CLI), of the daemon's process alone, and of its
PostgreSQL backends, from
``/proc/<pid>/stat`` (the load of other processes does not reach these
clocks); and the rows the session table took per trigger (inserts and
updates, from PostgreSQL's own statistics).

    .venv/bin/python benchmarks/before_after.py --baseline DIR [--triggers 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import asyncpg
from common import DEFAULT_DSN, NOOP_CLI, drop_schema
from cpu import Clocks, backend_pids
from rows import Row, table
from spawner import Series, pool, triggering

from tests.helpers import DaemonProcess, free_port, write_butler

HERE = Path(__file__).resolve().parent
#: An idle backend's table statistics reach PostgreSQL's counters within 10 s.
STATS_S = 11.0


class TreeDaemon(DaemonProcess):
    """``butler run`` imported from ``tree`` (first on the path), not this checkout."""

    def __init__(self, *args: object, tree: Path, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.tree = tree

    def argv(self) -> list[str]:
        boot = f"import sys; sys.path.insert(0, {str(self.tree)!r})\n"
        boot += "from butler.cli import main\nmain()\n"
        return [sys.executable, "-c", boot, *super().argv()[3:]]


async def session_rows(dsn: str, schema: str) -> tuple[int, int]:
    """(inserts, updates) the schema's session table has taken, as PostgreSQL counts them."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        row = await conn.fetchrow(
            "SELECT n_tup_ins, n_tup_upd FROM pg_stat_user_tables"
            " WHERE schemaname = $1 AND relname = 'sessions'",
            schema,
        )
    finally:
        await conn.close()
    return (row["n_tup_ins"], row["n_tup_upd"]) if row else (0, 0)


async def measure(dsn: str, triggers: int, baseline: Path, tmp: Path) -> list[Row]:
    trees = {"after (this tree)": HERE.parent, "before (baseline)": baseline}
    env = {"ANTHROPIC_API_KEY": "sk-bench", "BUTLER_DATA_DIR": str(tmp / "data")}
    daemons, schemas = {}, {}
    for n, (label, tree) in enumerate(trees.items()):
        port = free_port()
        schemas[label] = f"bench_ba_{port}"
        folder = write_butler(
            tmp / f"roster{n}",
            f"bench{n}",
            port=port,
            schema=schemas[label],
            runtime={"cli_path": str(NOOP_CLI), "max_concurrent_sessions": 8},
        )
        daemons[label] = TreeDaemon(folder, port=port, database_url=dsn, env=env, tree=tree)
    try:
        for daemon in daemons.values():
            daemon.start()
        return await _rows(dsn, triggers, daemons, schemas)
    finally:
        for daemon in daemons.values():
            daemon.stop()
        for schema in schemas.values():
            await drop_schema(dsn, schema)


async def _rows(dsn: str, triggers: int, daemons: dict, schemas: dict) -> list[Row]:
    series = {label: Series() for label in daemons}
    writes = {}
    for daemon in daemons.values():
        await pool(triggering(f"{daemon.url}/mcp"), 3, 1)  # warm up
    rounds = max(1, triggers // 10)
    await asyncio.sleep(STATS_S)
    for label in daemons:
        writes[label] = await session_rows(dsn, schemas[label])
    for r in range(rounds):
        size = triggers // rounds + (r < triggers % rounds)
        for label, daemon in daemons.items():
            pid = daemon.proc.pid
            backends = await backend_pids(dsn, pid)

            def clocks(pid: int = pid, backends: list[int] = backends) -> Clocks:
                return Clocks.read(pid, backends)

            await series[label].block(triggering(f"{daemon.url}/mcp"), size, 1, clocks)
    await asyncio.sleep(STATS_S)
    for label in daemons:
        ins, upd = await session_rows(dsn, schemas[label])
        writes[label] = (ins - writes[label][0], upd - writes[label][1])
    after, before = series.values()
    (after_w, before_w) = writes.values()
    n = after.count
    same = f"{n} triggers each, one at a time, in {rounds} interleaved blocks"
    return [
        Row("trigger p50, c=1", after.ms(50), before.ms(50), "before", measures=same),
        Row("trigger p95, c=1", after.ms(95), before.ms(95), "before", measures=same),
        Row(
            "CPU ms per trigger, daemon and all it reaped",
            after.per_item_ms("daemon"),
            before.per_item_ms("daemon"),
            "before",
            measures="the daemon's own CPU and its reaped descendants' (jails, CLIs), "
            "/proc/<pid>/stat, per trigger",
        ),
        Row(
            "CPU ms per trigger, the daemon's own process",
            after.per_item_ms("daemon_own"),
            before.per_item_ms("daemon_own"),
            "before",
            measures="the daemon's process alone, every thread, without its reaped "
            "descendants: its own Python per trigger, /proc/<pid>/stat utime+stime",
        ),
        Row(
            "CPU ms per trigger, its PostgreSQL backends",
            after.per_item_ms("database"),
            before.per_item_ms("database"),
            "before",
            measures="the CPU of the backends serving each daemon's connections, per trigger",
        ),
        Row(
            "session rows inserted per trigger",
            after_w[0] / n,
            before_w[0] / n,
            "before",
            unit="",
            measures="pg_stat_user_tables.n_tup_ins of each schema's sessions table",
        ),
        Row(
            "session rows updated per trigger",
            after_w[1] / n,
            before_w[1] / n,
            "before",
            unit="",
            measures="pg_stat_user_tables.n_tup_upd of each schema's sessions table",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the tree before")
    parser.add_argument("--triggers", type=int, default=40)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    print(f"load {os.getloadavg()}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        baseline = args.baseline.resolve()
        found = asyncio.run(measure(args.database_url, args.triggers, baseline, Path(tmp)))
    print(table(found, verdicts=False))
    print(f"load {os.getloadavg()}; {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
