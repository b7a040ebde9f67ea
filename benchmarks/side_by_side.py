"""butler beside its predecessor (the original "butlers" project), the same no-op CLI, one run.

    .venv/bin/python benchmarks/side_by_side.py [--predecessor PATH] [--triggers 30]

PATH (default ``$BUTLERS_CHECKOUT``, else ``../butlers``) is a checkout of
https://github.com/Tzeusy/butlers with its environment made (``uv sync``,
Python 3.12); without one the run says so in one line and exits 0.

Both daemons run from a roster of one written here, on the same PostgreSQL
(``--database-url``, a schema each), with the same runtime: butler's no-op
Claude CLI jailed as by default (``tests/runtimes/fake_claude.py``, the
SDK's protocol), the predecessor's ``claude`` on ``PATH`` being the
print-mode no-op (``benchmarks/noop_print_cli.py``, its shape), unjailed as
it runs. Triggers alternate in blocks between the two, one at a time and
then as pools of eight over one queue; CPU per trigger is each daemon's own
and reaped descendants' plus its PostgreSQL backends'
(``benchmarks/cpu.py``); memory is each daemon's RSS at start and after
the run; start to ``/health`` is timed from launch. Each row's goal is
being ahead of the predecessor.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, NOOP_CLI, REPO, drop_schema, rss_mb
from cpu import Clocks, backend_pids
from rows import Row, ratio_at_least, ratio_at_most, table
from spawner import PRINT_CLI, Series, pool, triggering

from tests.helpers import TEST_TOKEN, free_port, write_butler

PREDECESSOR_URL = "https://github.com/Tzeusy/butlers"


def predecessor_checkout(given: str | None) -> Path | None:
    """The predecessor's checkout with its environment made, or None."""
    path = Path(given or os.environ.get("BUTLERS_CHECKOUT") or REPO.parent / "butlers")
    ready = (path / "src" / "butlers" / "cli.py").is_file() and (path / ".venv").is_dir()
    return path if ready else None


@dataclass
class Daemon:
    name: str
    pid: int
    url: str
    start_ms: float


def _wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"a daemon exited while starting (status {proc.returncode})")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.01)
    raise SystemExit(f"no /health on port {port} within {timeout:g} s")


@contextmanager
def running(
    name: str, argv: list[str], env: dict[str, str], port: int, cwd: Path
) -> Iterator[Daemon]:
    log = (cwd / f"{name}.log").open("wb")
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_healthy(port, proc)
        yield Daemon(
            name, proc.pid, f"http://127.0.0.1:{port}/mcp", (time.perf_counter() - started) * 1000
        )
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def ours(tmp: Path, dsn: str) -> tuple[list[str], dict[str, str], int, str]:
    port = free_port()
    schema = f"sbs_ours_{port}"
    runtime = {"cli_path": str(NOOP_CLI), "max_concurrent_sessions": 8}
    folder = write_butler(tmp / "ours", "bench", port=port, schema=schema, runtime=runtime)
    argv = [sys.executable, "-m", "butler.cli", "run", "--config", str(folder)]
    argv += ["--port", str(port), "--database-url", dsn, "--log-level", "warning"]
    env = {
        **os.environ,
        "BUTLER_TOKEN": TEST_TOKEN,
        "ANTHROPIC_API_KEY": "sk-bench",
        "BUTLER_DATA_DIR": str(tmp / "ours-data"),
        "PYTHONPATH": str(REPO),
    }
    return argv, env, port, schema


def theirs(checkout: Path, tmp: Path, dsn: str) -> tuple[list[str], dict[str, str], int, str]:
    """The predecessor's ``butlers run`` on a roster of one, ``claude`` the print-mode no-op."""
    port = free_port()
    schema = f"sbs_theirs_{port}"
    folder = tmp / "theirs" / "bench"
    folder.mkdir(parents=True)
    database = dsn.rsplit("/", 1)[1].split("?")[0]
    (folder / "butler.toml").write_text(
        f'[butler]\nname = "bench"\nport = {port}\ndescription = "side by side"\n\n'
        f"[butler.runtime_seed]\nmax_concurrent_sessions = 8\n\n"
        f'[butler.db]\nname = "{database}"\nschema = "{schema}"\n'
    )
    (folder / "CLAUDE.md").write_text("You are a benchmark.\n")
    bin_dir = tmp / "theirs-bin"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(PRINT_CLI)
    argv = [str(checkout / ".venv" / "bin" / "butlers"), "run", "--config", str(folder)]
    env = {
        **os.environ,
        "DATABASE_URL": dsn,
        "ANTHROPIC_API_KEY": "sk-bench",
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
    }
    return argv, env, port, schema


async def block(series: Series, daemon: Daemon, dsn: str, count: int, concurrency: int) -> None:
    """``count`` triggers of ``daemon`` by ``concurrency`` clients, with its clocks."""
    backends = await backend_pids(dsn, daemon.pid)
    await series.block(
        triggering(daemon.url), count, concurrency, lambda: Clocks.read(daemon.pid, backends)
    )


async def compare(a: Daemon, b: Daemon, dsn: str, triggers: int) -> list[Row]:
    idle = {a.name: rss_mb(a.pid), b.name: rss_mb(b.pid)}
    for d in (a, b):
        await pool(triggering(d.url), 3, 1)
    one = {a.name: Series(), b.name: Series()}
    eight = {a.name: Series(), b.name: Series()}
    for _ in range(max(1, triggers // 10)):
        for d in (a, b):
            await block(one[d.name], d, dsn, 10, 1)
    for _ in range(2):
        for d in (a, b):
            await block(eight[d.name], d, dsn, triggers, 8)
    after = {a.name: rss_mb(a.pid), b.name: rss_mb(b.pid)}
    x, y = a.name, b.name
    ahead, more = ratio_at_most(1.0), ratio_at_least(1.0)
    same = f"{one[x].count} each, alternating blocks of 10"
    return [
        Row("trigger p50, c=1", one[x].ms(50), one[y].ms(50), y, goal=ahead, measures=same),
        Row("trigger p95, c=1", one[x].ms(95), one[y].ms(95), y, goal=ahead, measures=same),
        Row(
            "triggers/s, c=8",
            eight[x].rate(),
            eight[y].rate(),
            y,
            unit="/s",
            goal=more,
            measures="pools of 8 clients over one queue, no barrier, alternating",
        ),
        Row(
            "CPU ms per trigger, daemon + descendants",
            one[x].per_item_ms("daemon"),
            one[y].per_item_ms("daemon"),
            y,
            goal=ahead,
            measures="each daemon's own and reaped descendants' CPU at c=1 (a jail's runtime "
            "is reaped by init, not the daemon, under bubblewrap 0.8: see benchmarks/cpu.py)",
        ),
        Row(
            "database CPU ms per trigger",
            one[x].per_item_ms("database"),
            one[y].per_item_ms("database"),
            y,
            goal=ahead,
            measures="CPU of the PostgreSQL backends serving each daemon's connections",
        ),
        Row(
            "RSS MB at start",
            idle[x],
            idle[y],
            y,
            unit="MB",
            goal=ahead,
            measures="VmRSS once /health answered",
        ),
        Row(
            f"RSS MB after {3 + one[x].count + eight[x].count} triggers",
            after[x],
            after[y],
            y,
            unit="MB",
            goal=ahead,
            measures="VmRSS at the end of the run",
        ),
        Row(
            "start to /health",
            a.start_ms,
            b.start_ms,
            y,
            goal=ahead,
            measures="one start each, from launch to /health answering 200",
        ),
    ]


async def main_async(checkout: Path, dsn: str, triggers: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as work:
        tmp = Path(work)
        argv_a, env_a, port_a, schema_a = ours(tmp, dsn)
        argv_b, env_b, port_b, schema_b = theirs(checkout, tmp, dsn)
        try:
            with running("butler", argv_a, env_a, port_a, tmp) as a:
                with running("predecessor", argv_b, env_b, port_b, checkout) as b:
                    return await compare(a, b, dsn, triggers)
        finally:
            await drop_schema(dsn, schema_a)
            await drop_schema(dsn, schema_b)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predecessor", help="checkout of the predecessor (uv sync done)")
    parser.add_argument("--triggers", type=int, default=30)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    checkout = predecessor_checkout(args.predecessor)
    if checkout is None:
        print(
            f"side by side skipped: no predecessor checkout with its .venv (git clone "
            f"{PREDECESSOR_URL} and uv sync there, then --predecessor PATH)"
        )
        return
    print(f"load {os.getloadavg()}")
    found = asyncio.run(main_async(checkout, args.database_url, args.triggers))
    print(table(found, verdicts=True))
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
