"""Start-up time: from launching ``butler run`` to the first ``GET /health`` that answers 200.

Three cases, each run several times:

- external: a PostgreSQL given by URL, the butler's schema already migrated;
- embedded, fresh: no URL and an empty data folder, so ``initdb`` runs first;
- embedded, warm: no URL and the data folder of an earlier run (the server
  stopped with the daemon, so it starts again, without ``initdb``).

A floor is measured too: ``butler --version``, the interpreter and imports alone.
Beside each wall-clock figure, the daemon's own CPU time up to the moment ``/health``
answered: a start is almost all CPU on one thread, so on a busy machine that figure
moves much less than the wall clock does.

``--importtime`` instead starts the daemon once under ``python -X importtime`` and
prints what its start imported before ``/health`` answered, by top-level package
(each module's own time, summed), the largest first.

``--baseline DIR`` (another checkout, e.g. ``git worktree add /tmp/base main``) runs
the external case from that tree too, each start alternating with one of this tree,
so load hits both alike: a before/after in one run.

    .venv/bin/python benchmarks/startup.py [--runs 5] [--database-url URL] [--no-embedded]
        [--baseline DIR] [--importtime]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import asyncpg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers import free_port, write_butler  # noqa: E402

DEFAULT_DSN = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (all its threads)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_once(
    folder: Path,
    env: dict[str, str],
    dsn: str | None,
    timeout: float = 120,
    *,
    tree: Path = REPO,
    cpu: list[float] | None = None,
) -> float:
    """Seconds from launch to a healthy daemon; the daemon is stopped afterwards.

    ``tree`` is the checkout whose ``butler`` runs (``-m`` imports it from the working
    directory first); ``cpu`` gets the daemon's CPU seconds up to that moment.
    """
    port = free_port()
    argv = [sys.executable, "-m", "butler.cli", "run", "--config", str(folder)]
    argv += ["--port", str(port), "--log-level", "warning"]
    if dsn:
        argv += ["--database-url", dsn]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=tree, stderr=subprocess.PIPE, text=True)
    try:
        deadline = started + timeout
        while not healthy(port):
            if proc.poll() is not None:
                raise RuntimeError(f"butler run exited early:\n{proc.stderr.read()}")
            if time.perf_counter() > deadline:
                raise TimeoutError(f"not healthy within {timeout} s")
            time.sleep(0.005)
        elapsed = time.perf_counter() - started
        if cpu is not None:
            cpu.append(cpu_seconds(proc.pid))
        return elapsed
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def imports_of_a_start(folder: Path, env: dict[str, str], dsn: str, top: int = 20) -> None:
    """Start the daemon once under ``-X importtime``; print its imports by package."""
    port = free_port()
    argv = [sys.executable, "-X", "importtime", "-m", "butler.cli", "run", "--config", str(folder)]
    argv += ["--port", str(port), "--log-level", "warning", "--database-url", dsn]
    with tempfile.TemporaryFile("w+") as err:  # a pipe would fill and stop the daemon
        proc = subprocess.Popen(argv, env=env, cwd=REPO, stderr=err, text=True)
        try:
            while not healthy(port):
                if proc.poll() is not None:
                    raise RuntimeError("butler run exited early")
                time.sleep(0.005)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        err.seek(0)
        lines = [line for line in err if line.startswith("import time:") and "[us]" not in line]
    spent: dict[str, int] = {}
    for line in lines:
        own, _, name = line[len("import time:") :].split("|")
        package = name.strip().split(".")[0]
        spent[package] = spent.get(package, 0) + int(own)
    print(f"{len(lines)} modules, {sum(spent.values()) / 1000:.0f} ms of their own import time")
    for package, us in sorted(spent.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {package:28s} {us / 1000:7.1f} ms")


def floor_once(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "butler.cli", "--version"], env=env, check=True, capture_output=True
    )
    return time.perf_counter() - started


def measure(runs: int, once: Callable[[], float]) -> list[float]:
    return [once() for _ in range(runs)]


def report(label: str, seconds: list[float], cpu: list[float] | None = None) -> None:
    ms = [s * 1000 for s in seconds]
    used = f"{statistics.median(cpu) * 1000:.0f} ms" if cpu else "-"
    print(
        f"| {label} | {len(ms)} | {statistics.median(ms):.0f} ms "
        f"| {min(ms):.0f} ms | {max(ms):.0f} ms | {used} |",
        flush=True,
    )


def alternating(
    trees: dict[str, Path], runs: int, folder: Path, env: dict[str, str], dsn: str
) -> None:
    """Starts of each tree in turn, ``runs`` rounds, one row per tree."""
    took: dict[str, list[float]] = {label: [] for label in trees}
    cpu: dict[str, list[float]] = {label: [] for label in trees}
    for tree in trees.values():
        start_once(folder, env, dsn, tree=tree)  # its bytecode and page cache; not counted
    for _ in range(runs):
        for label, tree in trees.items():
            took[label].append(start_once(folder, env, dsn, tree=tree, cpu=cpu[label]))
    for label in trees:
        report(label, took[label], cpu[label])


async def drop_schema(dsn: str, schema: str) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    parser.add_argument("--no-embedded", action="store_true")
    parser.add_argument("--baseline", type=Path, help="another checkout, started alternately")
    parser.add_argument("--importtime", action="store_true", help="a start's imports, by package")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.setdefault("BUTLER_ALLOW_ROOT", "1")  # as the suite runs it (tests/conftest.py)
    work = Path(tempfile.mkdtemp(prefix="butler-bench-"))
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    try:
        roster = work / "roster"
        external = write_butler(roster, "bench", port=free_port(), schema=schema)
        embedded = write_butler(roster, "bench_embedded", port=free_port())
        print(f"load {os.getloadavg()}", flush=True)
        if args.importtime:
            start_once(external, env, args.database_url)  # migrates the schema; not counted
            imports_of_a_start(external, env, args.database_url)
            return
        print(
            "| case | runs | median | min | max | CPU to /health, median |\n"
            "|---|---|---|---|---|---|",
            flush=True,
        )
        report("floor: `butler --version`", measure(args.runs, lambda: floor_once(env)))

        start_once(external, env, args.database_url)  # migrates the schema; not counted
        trees = {"external PostgreSQL": REPO}
        if args.baseline:
            trees["external PostgreSQL, baseline"] = args.baseline.resolve()
        alternating(trees, args.runs, external, env, args.database_url)
        if args.no_embedded:
            return

        def fresh() -> float:
            # Under /tmp: as root the server's system user must reach the folder.
            data = Path(tempfile.mkdtemp(prefix="butler-bench-data-"))
            try:
                return start_once(embedded, {**env, "BUTLER_DATA_DIR": str(data)}, None)
            finally:
                shutil.rmtree(data, ignore_errors=True)

        report("embedded, fresh data folder (initdb)", measure(args.runs, fresh))

        warm = {**env, "BUTLER_DATA_DIR": str(work / "data")}
        start_once(embedded, warm, None)  # initdb and migrations; not counted
        report(
            "embedded, warm data folder",
            measure(args.runs, lambda: start_once(embedded, warm, None)),
        )
    finally:
        print(f"load {os.getloadavg()}", flush=True)
        asyncio.run(drop_schema(args.database_url, schema))
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
