"""Where a trigger's time and CPU go: its steps timed inside the daemon, beside the floors.

One daemon (jailed, the no-op Claude CLI) with ``benchmarks/phases`` on its
``PYTHONPATH``, whose ``sitecustomize`` times the session path's steps through
public seams (butler's own functions, claude-agent-sdk's ``query()``); one
client calls ``trigger`` one at a time, each call followed by a launch of the
same CLI in the jailed floor (``benchmarks/jailed_floor.py``) and one started
directly. Printed: each step's median start, duration and end, in ms from the
client's call (all processes read the same monotonic clock), and the CPU the
daemon's event loop spent in it. ``--pool 0`` times the path without warm jails;
``BUTLER_PHASES_FINE=1`` in the environment times the steps inside the steps too.

``--perf``: the daemon runs under ``perf record`` (every process it starts
inherits the counter: a sample per 0.1 ms of CPU), and the CPU of each
trigger is split by process: the daemon's threads, the launch script, setsid,
bubblewrap, the bridge, the CLI. Needs ``perf`` and the right to use it.

    .venv/bin/python benchmarks/trigger_phases.py [--triggers 30] [--pool N] [--perf]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, NOOP_CLI, drop_schema
from jailed_floor import floor_for
from rows import Row
from spawner import sdk_direct

from tests.helpers import DaemonProcess, butler_client, free_port, write_butler

HERE = Path(__file__).resolve().parent
WARM_UP = 3
#: perf's sampling period: one sample per this many nanoseconds of a task's CPU.
PERIOD_NS = 100_000


class PerfDaemon(DaemonProcess):
    """``butler run`` under ``perf record``, every process it starts counted with it."""

    def __init__(self, *args: object, data: Path, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.data = data

    def argv(self) -> list[str]:
        perf = ["perf", "record", "-q", "-e", "task-clock", "-c", str(PERIOD_NS)]
        return [*perf, "-k", "CLOCK_MONOTONIC", "-o", str(self.data), "--", *super().argv()]


def daemon_pid(perf_pid: int) -> int:
    """The daemon: perf's one child."""
    children = Path(f"/proc/{perf_pid}/task/{perf_pid}/children").read_text().split()
    return int(children[0])


def samples(data: Path) -> list[tuple[str, int, int, float]]:
    """(comm, pid, tid, time) of every sample perf took."""
    out = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", "comm,pid,tid,time"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = []
    for line in out.splitlines():
        head, _, when = line.strip().rstrip(":").rpartition(" ")
        comm, _, ids = head.strip().rpartition(" ")
        pid, _, tid = ids.partition("/")
        found.append((comm.strip(), int(pid), int(tid), float(when)))
    return found


def role(comm: str, pid: int, tid: int, daemon: int) -> str:
    """What a sampled process is in a trigger's path."""
    if pid == daemon:
        return "daemon, event loop thread" if tid == pid else "daemon, other threads"
    if comm.startswith("run-") or comm == "sh":
        return "launch script (sh)"
    if comm in ("setsid", "bwrap", "bridge"):
        return comm if comm != "bwrap" else "bubblewrap"
    if "claude" in comm or comm.startswith("python"):
        return "the no-op CLI"
    return f"other: {comm}"


async def measure(
    count: int,
    pool: str | None,
    tmp: Path,
    dsn: str = DEFAULT_DSN,
    perf: bool = False,
    profile: Path | None = None,
) -> dict:
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
        **({"BUTLER_PHASES_PROFILE": str(profile)} if profile else {}),
        "BUTLER_PHASES_FROM": str(WARM_UP),
        **({"BUTLER_JAIL_POOL": pool} if pool is not None else {}),
    }
    floor = floor_for(folder, tmp)
    calls: list[tuple[float, float]] = []
    jailed: list[float] = []
    direct: list[float] = []
    data = tmp / "perf.data"
    kind = PerfDaemon if perf else DaemonProcess
    extra = {"data": data} if perf else {}
    pid = 0
    try:
        with kind(folder, port=port, database_url=dsn, env=env, **extra) as daemon:
            assert daemon.proc is not None
            pid = daemon_pid(daemon.proc.pid) if perf else daemon.proc.pid
            async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                for i in range(count + WARM_UP):
                    start = time.perf_counter()
                    result = await client.call_tool("trigger", {"prompt": f"phases {i}"})
                    calls.append((start, time.perf_counter()))
                    if not result.structured_content["success"]:
                        raise SystemExit(result.structured_content["error"])
                    start = time.perf_counter()
                    await floor.launch(i)
                    jailed.append((time.perf_counter() - start) * 1000)
                    start = time.perf_counter()
                    await sdk_direct(i)
                    direct.append((time.perf_counter() - start) * 1000)
            calls.append((time.perf_counter(), 0.0))  # the end of the last trigger's window
    finally:
        await drop_schema(dsn, f"bench_{port}")
    if not out.exists():  # a step it wraps was renamed: the daemon's log says which
        raise SystemExit(f"the daemon's step timing did not load; its log: {folder}/daemon.log")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return {
        "calls": calls[WARM_UP:],
        "jailed": jailed[WARM_UP:],
        "direct": direct[WARM_UP:],
        "rows": rows[WARM_UP:],
        "samples": samples(data) if perf else None,
        "daemon": pid,
    }


def report(found: dict) -> list[Row]:
    calls, rows = found["calls"], found["rows"]
    med = statistics.median
    steps: dict[str, list[tuple[float, float, float, float]]] = {}
    for (called, answered), events in zip(calls, rows, strict=False):
        seen = set()
        for name, start, end, cpu in events:
            if name not in seen:
                seen.add(name)
                steps.setdefault(name, []).append(
                    (
                        (start - called) * 1000,
                        (end - start) * 1000,
                        (end - called) * 1000,
                        cpu * 1000,
                    )
                )
        steps.setdefault("the client's call", []).append((0, 0, (answered - called) * 1000, 0))
    total = med([s[2] for s in steps["the client's call"]])
    jailed, direct = med(found["jailed"]), med(found["direct"])
    print(
        f"{len(rows)} triggers: p50 {total:.1f} ms; the jailed floor p50 {jailed:.1f} ms, "
        f"the direct floor {direct:.1f} ms"
    )
    print(f"{'step':44s} {'start':>7s} {'takes':>7s} {'end':>7s} {'loop CPU':>9s}")
    for name, values in sorted(steps.items(), key=lambda kv: med([v[0] for v in kv[1]])):
        start, takes, end, cpu = (med([v[k] for v in values]) for k in range(4))
        print(f"{name:44s} {start:7.1f} {takes:7.1f} {end:7.1f} {cpu:9.2f}")
    print("(ms from the client's call, medians; loop CPU: the daemon's event-loop thread)")
    if found["samples"] is not None:
        by_process(found)
    return [
        Row(
            "trigger p50, c=1, steps timed",
            total,
            jailed,
            "no-op CLI jailed (jailed floor)",
            measures=f"median of {len(rows)} triggers to a daemon whose steps are timed "
            "(benchmarks/trigger_phases.py, the breakdown printed above the table), against "
            "the jailed floor launched after each: shows the phase run works, not a goal",
        )
    ]


def by_process(found: dict) -> None:
    """CPU per trigger by process, from perf's samples in each trigger's window (from its
    call to the next call, the floors' launches between them not being the daemon's)."""
    calls, daemon = found["calls"], found["daemon"]
    windows = [(calls[i][0], calls[i + 1][0]) for i in range(len(calls) - 1)]
    spent: collections.Counter[str] = collections.Counter()
    first, last = windows[0][0], windows[-1][1]
    for comm, pid, tid, when in found["samples"]:
        if first <= when < last:
            spent[role(comm, pid, tid, daemon)] += PERIOD_NS / 1e6
    n = len(windows)
    total = sum(spent.values()) / n
    print(f"\nCPU per trigger by process (perf, one sample per {PERIOD_NS // 1000} us of CPU):")
    for name, ms in spent.most_common():
        print(f"  {name:40s} {ms / n:7.2f} ms  {ms / n / total:6.1%}")
    print(f"  {'all of the daemon and its children':40s} {total:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=int, default=30)
    parser.add_argument("--pool", default=None, help="BUTLER_JAIL_POOL for the daemon")
    parser.add_argument("--perf", action="store_true", help="CPU by process, under perf")
    parser.add_argument("--profile", type=Path, help="cProfile the event loop into this file")
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    if args.perf and shutil.which("perf") is None:
        raise SystemExit("--perf needs perf (linux-perf) on PATH")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    with tempfile.TemporaryDirectory() as tmp:
        found = asyncio.run(
            measure(args.triggers, args.pool, Path(tmp), args.database_url, args.perf, args.profile)
        )
    print(f"load average before: {load}; after: {' '.join(map(str, os.getloadavg()))}")
    report(found)


if __name__ == "__main__":
    main()
