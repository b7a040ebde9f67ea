"""Every figure of butler's performance goals, each beside its reference from the same run.

    .venv/bin/python benchmarks/all.py [--database-url URL]     # the full run (~10 min)
    .venv/bin/python benchmarks/all.py --smoke                  # a few iterations, no verdicts

Rows: tool calls through butler against bare FastMCP serving the same tools
(both transports); the first call on fresh daemons against later ones;
triggers with a no-op CLI against that CLI run directly, and against a
print-mode no-op CLI (the predecessor's shape), one at a time and as pools
of eight; CPU per trigger machine-wide and as accounted; RSS after a burst
of triggers against idle at start; listings at 1,000,000 rows against
10,000, every page full; start to ``/health`` against ``butler --version``;
a trigger run by a `butler worker` against the same trigger run in the daemon,
and triggers/s at concurrency 8 with 1, 2 and 3 workers;
`butler up` of 100 butlers to every ``/health``, its RSS and its PostgreSQL
connections, against a roster of one; sessions of the genuine Claude Code
and Codex jailed against unjailed (``genuine.py``); a trigger's steps timed
inside the daemon (``trigger_phases.py``). ``--smoke`` also runs, each with a
few iterations, the benchmarks that print their own figures
(:data:`STANDALONE`), and fails when one fails.
Each row says what it measures under the table. The full run prints whether
each goal is met, counting only rows that have one; ``--smoke`` (what CI
runs) only proves every benchmark runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli
import genuine
import jail_start
import listings
import roster_up
import spawner
import startup
import toolcalls
import trigger_phases
import workers
from common import DEFAULT_DSN, drop_schema, median
from rows import Row, at_most, table, tally

from tests.helpers import free_port, write_butler

SIZES = {
    "full": {
        "calls": 60,
        "triggers": 40,
        "burst": 1000,
        "rows": 1_000_000,
        "requests": 20,
        "starts": 5,
        "small": listings.SMALL,
        "remote": 20,
        "c8": (40, 4),
        "butlers": 100,
    },
    "smoke": {
        "calls": 6,
        "triggers": 4,
        "burst": 12,
        "rows": 5_000,
        "requests": 3,
        "starts": 1,
        "small": 1_000,
        "remote": 2,
        "c8": (4, 1),
        "butlers": 3,
    },
}


HERE = Path(__file__).resolve().parent
#: Benchmarks that print their own figures, and the arguments that make each run briefly.
STANDALONE = {
    "jailed_floor.py": ["--runs", "2"],
    "warm_jails.py": ["--triggers", "2"],
    "jail_start.py": ["--runs", "2"],
    "chat_channels.py": ["--messages", "3"],
    "senders.py": ["--calls", "3", "--mails", "2"],
    "spawn_time.py": ["--runs", "1"],
    # Without a checkout of the predecessor it says so in one line and exits 0.
    "side_by_side.py": ["--triggers", "2"],
    "startup.py": ["--importtime"],
    # This tree against itself: what a change's before and after would run.
    "before_after.py": ["--triggers", "2", "--baseline", str(HERE.parent)],
}


def run_standalone(dsn: str) -> None:
    """Each of :data:`STANDALONE` run briefly; a failure ends the run, naming it."""
    for name, args in STANDALONE.items():
        takes_dsn = name not in ("jailed_floor.py", "jail_start.py", "chat_channels.py")
        argv = [sys.executable, str(HERE / name), *args]
        argv += ["--database-url", dsn] if takes_dsn else []
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        last = (done.stdout.strip().splitlines() or [""])[-1]
        print(f"{name} {' '.join(args)}: exit {done.returncode}; {last[:120]}")
        if done.returncode != 0:
            raise SystemExit(
                f"benchmarks/{name} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
            )


def phase_rows(dsn: str, triggers: int, tmp: Path) -> list[Row]:
    """The trigger path's steps timed inside a daemon, printed, and one row of its total."""
    found = asyncio.run(trigger_phases.measure(triggers, None, tmp, dsn))
    return trigger_phases.report(found)


def startup_rows(dsn: str, runs: int, tmp: Path) -> list[Row]:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["BUTLER_DATA_DIR"] = str(tmp / "start-data")
    schema = f"bench_start_{uuid.uuid4().hex[:8]}"
    folder = write_butler(tmp / "start-roster", "start", port=free_port(), schema=schema)
    try:
        startup.start_once(folder, env, dsn)  # migrates the schema; not counted
        starts = [startup.start_once(folder, env, dsn) * 1000 for _ in range(runs)]
        floor = [startup.floor_once(env) * 1000 for _ in range(runs)]
    finally:
        asyncio.run(drop_schema(dsn, schema))
    return [
        Row(
            "start to /health, external PostgreSQL",
            median(starts),
            median(floor),
            "`butler --version`",
            goal=at_most(800, "ms"),
            measures=f"median of {runs} starts of `butler run` (schema already migrated) to the "
            "first /health answering 200, against the interpreter and CLI alone",
        )
    ]


def accounting_rows() -> list[Row]:
    """Whether a jailed grandchild's CPU reaches the accounting of the process that jailed it."""
    burned = jail_start.BURN_MS
    rows = []
    for adopt in (False, True):
        how = "as the benchmark adopts it" if adopt else "as the daemon sees it"
        for name, spent in asyncio.run(jail_start.accounting(adopt=adopt)).items():
            rows.append(
                Row(
                    f"jailed grandchild's CPU reaching its launcher, {name}, {how}",
                    spent.children * 1000,
                    burned,
                    "CPU it burned (its own clock)",
                    measures=f"a jailed shell's child burns {burned} ms of CPU ({name}); the "
                    "figure is what the kernel added to the launcher's reaped children"
                    + (", the launcher being the subreaper of the jail's orphans" if adopt else ""),
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="few iterations, no verdicts")
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    size = SIZES["smoke" if args.smoke else "full"]
    dsn = args.database_url
    machine = f"{platform.node()}, {os.cpu_count()} cores, {platform.platform()}"
    print(f"machine: {machine}, Python {platform.python_version()}; load {os.getloadavg()}")
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as work:
        tmp = Path(work)
        env = {"BUTLER_DATA_DIR": str(tmp / "data"), "ANTHROPIC_API_KEY": "sk-bench"}
        rows += asyncio.run(toolcalls.measure(dsn, size["calls"], env, tmp / "tc", size["starts"]))
        rows += accounting_rows()
        rows += asyncio.run(spawner.measure(dsn, size["triggers"], size["burst"], tmp / "sp"))
        # Smoke's small tables cannot fill every page: short pages are only reported there.
        found = listings.measure(
            dsn, size["rows"], size["requests"], tmp / "ls", size["small"], strict=not args.smoke
        )
        rows += asyncio.run(found)
        rows += startup_rows(dsn, 2 if args.smoke else 5, tmp)
        rows += cli.measure(dsn, 2 if args.smoke else 7, tmp / "cli")
        rows += workers.measure(dsn, size["remote"], tmp / "wk", *size["c8"])
        rows += roster_up.measure(dsn, size["butlers"])
        rows += genuine.measure(dsn, 2 if args.smoke else 15, tmp / "gn")
        rows += phase_rows(dsn, size["triggers"] if args.smoke else 30, tmp / "ph")
        if args.smoke:
            run_standalone(dsn)
    print(table(rows, verdicts=not args.smoke))
    print(f"load at the end: {os.getloadavg()}")
    if not args.smoke:
        met, counted = tally(rows)
        print(
            f"\n{met} of {counted} rows with a goal meet it ({len(rows) - counted} rows "
            "without a goal, shown for what they explain, are not counted)."
        )


if __name__ == "__main__":
    main()
