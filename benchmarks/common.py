"""What the benchmarks share: statistics, CPU clocks, a butler folder, a reference server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers import free_port, wait_until  # noqa: E402

# The benchmarks run where the suite runs, as root on the CI machine: butler refuses root
# unless told, as the suite tells it (tests/conftest.py).
os.environ.setdefault("BUTLER_ALLOW_ROOT", "1")
DEFAULT_DSN = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
NOOP_CLI = REPO / "tests" / "runtimes" / "fake_claude.py"
TICKS = os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def median(values: list[float]) -> float:
    return percentile(values, 50)


def proc_cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds of ``pid`` itself and of its reaped children, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime) / TICKS, (cutime + cstime) / TICKS


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MB, from ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class BareFastMCP:
    """``benchmarks/bare_fastmcp.py`` as a subprocess: the tool-call reference."""

    def __init__(self, folder: Path, dsn: str) -> None:
        self.folder, self.dsn = folder, dsn
        self.http_port, self.sse_port = free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def url(self, transport: str) -> str:
        if transport == "sse":
            return f"http://127.0.0.1:{self.sse_port}/sse"
        return f"http://127.0.0.1:{self.http_port}/mcp"

    def __enter__(self) -> BareFastMCP:
        argv = [sys.executable, str(REPO / "benchmarks" / "bare_fastmcp.py"), str(self.folder)]
        argv += [self.dsn, str(self.http_port), str(self.sse_port)]
        self.proc = subprocess.Popen(argv, cwd=REPO, stderr=subprocess.DEVNULL)
        wait_until(lambda: port_open(self.http_port) and port_open(self.sse_port), timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


async def drop_schema(dsn: str, schema: str) -> None:
    """Leave the database as it was: a benchmark's schema can hold a million rows."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()
