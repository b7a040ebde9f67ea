"""Every figure of butler's performance goals, each beside its reference from the same run.

    .venv/bin/python benchmarks/all.py [--database-url URL]     # the full run (~10 min)
    .venv/bin/python benchmarks/all.py --smoke                  # a few iterations, no verdicts

Rows: tool calls through butler against bare FastMCP serving the same tools
(both transports); the first call after ``/health`` against a warm one;
triggers with a no-op CLI against that CLI run directly (one at a time and
eight at a time), CPU per trigger of every process, RSS after a burst of
triggers against idle; listings at 1,000,000 rows against 1,000; start to
``/health`` against ``butler --version``. The full run prints whether each
goal is met; ``--smoke`` (what CI runs) only proves every benchmark runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli
import listings
import spawner
import startup
import toolcalls
from common import DEFAULT_DSN, drop_schema, median

from tests.helpers import free_port, write_butler

Row = tuple[str, float, float, str]
#: A goal: its words, and whether a row (measured, reference) meets it.
Goal = tuple[str, Callable[[float, float], bool]]

SIZES = {
    "full": {"calls": 60, "triggers": 40, "burst": 1000, "rows": 1_000_000, "requests": 20},
    "smoke": {"calls": 6, "triggers": 4, "burst": 12, "rows": 5_000, "requests": 3},
}


def goal_for(label: str) -> Goal | None:
    if label.startswith("tool call"):
        return "<= 1.2x", lambda ours, ref: ours <= 1.2 * ref
    if label.startswith("first tool call"):
        return "<= 2x", lambda ours, ref: ours <= 2 * ref
    if label.startswith("trigger p50"):
        return "<= 1.5x", lambda ours, ref: ours <= 1.5 * ref
    if label.startswith("triggers/s"):
        return ">= 0.6x", lambda ours, ref: ours >= 0.6 * ref
    if label.startswith("CPU ms"):
        return "<= 20 ms", lambda ours, _: ours <= 20
    if label.startswith("RSS"):
        return "<= idle + 20 MB", lambda ours, ref: ours <= ref + 20
    if " at " in label and "rows" in label:
        return "<= 50 ms", lambda ours, _: ours <= 50
    if label.startswith("start to /health"):
        return "<= 800 ms", lambda ours, _: ours <= 800
    if label.startswith("CLI CPU") and cli.has_goal(label.removeprefix("CLI CPU: ")):
        return f"<= {cli.GOAL_MS} ms", lambda ours, _: ours <= cli.GOAL_MS
    return None


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
    label = "start to /health, external PostgreSQL"
    return [(label, median(starts), median(floor), "`butler --version`")]


def print_table(rows: list[Row], verdicts: bool) -> int:
    """Print the rows as a Markdown table; return how many goals were missed."""
    print("| what | butler | reference | ratio | goal |" + (" met |" if verdicts else ""))
    print("|---|---|---|---|---|" + ("---|" if verdicts else ""))
    missed = 0
    for label, ours, ref, name in rows:
        goal = goal_for(label)
        unit = "MB" if label.startswith("RSS") else "/s" if label.startswith("triggers/s") else "ms"
        cells = f"| {label} | {ours:.1f} {unit} | {name}: {ref:.1f} {unit} | {ours / ref:.2f}x |"
        cells += f" {goal[0] if goal else ''} |"
        if verdicts and goal:
            met = goal[1](ours, ref)
            missed += not met
            cells += " yes |" if met else " **no** |"
        elif verdicts:
            cells += " |"
        print(cells, flush=True)
    return missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="few iterations, no verdicts")
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    size = SIZES["smoke" if args.smoke else "full"]
    dsn = args.database_url
    print(f"machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}, "
          f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as work:
        tmp = Path(work)
        env = {"BUTLER_DATA_DIR": str(tmp / "data"), "ANTHROPIC_API_KEY": "sk-bench"}
        rows += asyncio.run(toolcalls.measure(dsn, size["calls"], env, tmp / "tc"))
        rows += asyncio.run(spawner.measure(dsn, size["triggers"], size["burst"], tmp / "sp"))
        rows += asyncio.run(listings.measure(dsn, size["rows"], size["requests"], tmp / "ls"))
        rows += startup_rows(dsn, 2 if args.smoke else 5, tmp)
        rows += cli.measure(dsn, 2 if args.smoke else 7, tmp / "cli")
    missed = print_table(rows, verdicts=not args.smoke)
    if not args.smoke:
        print(f"\n{len(rows) - missed} of {len(rows)} rows meet their goal.")


if __name__ == "__main__":
    main()
