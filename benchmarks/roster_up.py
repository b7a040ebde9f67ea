"""Many butlers in one process: ``butler up`` until every ``/health`` answers, its memory
and its PostgreSQL connections.

Writes a roster of N butlers (each its own port and schema, the no-op CLI as
runtime), starts ``butler up`` once to migrate every schema (not counted),
then starts it again and times from the launch until every butler's
``/health`` answers 200; the RSS of the process and its descendants then,
and the most connections it held to PostgreSQL meanwhile (counted from its
own sockets). The reference is a roster of one started the same way, in the
same run. Goals (issue 28), for 100 butlers: every ``/health`` within 5 s,
under 150 MB.

A roster holds its schemas' locks on one connection per server, and past
``WARM_UP_TO`` butlers its pools open at most ``ROSTER_CONNECTIONS``
together (butler/roster_open.py): the run stops first, saying so, when the
server's ``max_connections`` leaves fewer free than that.

    .venv/bin/python benchmarks/roster_up.py [--butlers 100] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, NOOP_CLI, REPO, drop_schema
from rows import Row, at_most, table
from startup import healthy

from butler.roster_open import WARM_UP_TO
from butler.store.budget import ROSTER_CONNECTIONS
from tests.helpers import free_port, write_butler


def design(count: int) -> str:
    """What the roster is meant to hold, in words."""
    if count > WARM_UP_TO:
        return (
            f"by design at most {ROSTER_CONNECTIONS} for the pools together plus one for the "
            "schemas' locks (a socket being closed may be counted too)"
        )
    return (
        "by design a warm pool per butler, each growing with concurrent queries, plus one "
        "for the schemas' locks"
    )


def connections_needed(count: int) -> int:
    """What a roster of ``count`` butlers may hold: the leases' one, and its pools'."""
    return 1 + (count if count <= WARM_UP_TO else ROSTER_CONNECTIONS)


async def free_connections(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        limit = int(await conn.fetchval("SHOW max_connections"))
        reserved = int(await conn.fetchval("SHOW superuser_reserved_connections"))
        used = await conn.fetchval("SELECT count(*) FROM pg_stat_activity")
    finally:
        await conn.close()
    return limit - reserved - used


def write_roster(folder: Path, count: int, tag: str) -> list[int]:
    """``count`` butlers under ``folder``; their ports."""
    ports: list[int] = []
    while len(ports) < count:  # a port just freed may be handed out again
        port = free_port()
        if port not in ports:
            ports.append(port)
    runtime = {"cli_path": str(NOOP_CLI)}
    for i, port in enumerate(ports):
        write_butler(folder, f"b{i:03d}", port=port, schema=f"{tag}_{i:03d}", runtime=runtime)
    return ports


@dataclass
class Start:
    """One start of a roster: to every /health, and the process then."""

    seconds: float
    rss_mb: float
    #: The most connections to PostgreSQL the process held while starting, and at the end.
    peak_connections: int
    connections: int


def tree_rss_mb(proc: psutil.Process) -> float:
    """RSS of ``proc`` and of every live descendant, in MB (a shared page counted in each)."""
    total = 0
    for each in [proc, *proc.children(recursive=True)]:
        try:
            total += each.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


def database_sockets(proc: psutil.Process, port: int) -> int:
    """Established TCP connections of ``proc`` to ``port`` (the PostgreSQL server's).

    One closed a moment ago may still be listed, half-closed (CLOSE_WAIT): not counted.
    """
    try:
        found = proc.net_connections("tcp")
    except psutil.NoSuchProcess:
        return 0
    return sum(1 for c in found if c.raddr and c.raddr.port == port and c.status == "ESTABLISHED")


def start(folder: Path, ports: list[int], dsn: str, timeout: float) -> Start:
    """Seconds from launch until every port's /health answers; the process's figures then."""
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.setdefault("BUTLER_ALLOW_ROOT", "1")
    env["ANTHROPIC_API_KEY"] = "sk-bench"
    env["BUTLER_DATA_DIR"] = str(folder.parent / "data")
    argv = [sys.executable, "-m", "butler.cli", "up", "--roster", str(folder)]
    argv += ["--database-url", dsn, "--log-level", "warning"]
    db_port = urlsplit(dsn).port or 5432
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stderr=subprocess.PIPE, text=True)
    watched = psutil.Process(proc.pid)
    peak = 0
    try:
        waiting = list(ports)
        while waiting:
            if proc.poll() is not None:
                raise SystemExit(f"butler up exited early:\n{proc.stderr.read()[-2000:]}")
            if time.perf_counter() - started > timeout:
                raise SystemExit(f"{len(waiting)} butlers not healthy within {timeout:g} s")
            peak = max(peak, database_sockets(watched, db_port))
            waiting = [p for p in waiting if not healthy(p)]
            if waiting:
                time.sleep(0.01)
        took = time.perf_counter() - started
        now = database_sockets(watched, db_port)
        return Start(took, tree_rss_mb(watched), max(peak, now), now)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure(dsn: str, count: int, timeout: float = 300) -> list[Row]:
    free = asyncio.run(free_connections(dsn))
    needed = connections_needed(count)
    if free < needed:
        raise SystemExit(
            f"{count} butlers need {needed} PostgreSQL connections and {dsn} has {free} "
            "free (max_connections less those in use): raise max_connections, or run "
            "fewer butlers (--butlers)"
        )
    tag = f"bench_up_{uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as tmp:
        many, one = Path(tmp) / "many", Path(tmp) / "one"
        ports, single = write_roster(many, count, tag), write_roster(one, 1, f"{tag}_one")
        try:
            start(many, ports, dsn, timeout)  # migrates every schema; not counted
            start(one, single, dsn, timeout)
            ours = start(many, ports, dsn, timeout)
            ref = start(one, single, dsn, timeout)
        finally:
            for schema in [f"{tag}_{i:03d}" for i in range(count)] + [f"{tag}_one_000"]:
                asyncio.run(drop_schema(dsn, schema))
    return rows(count, ours, ref)


def rows(count: int, ours: Start, ref: Start) -> list[Row]:
    full = count == 100  # the goals are for 100 butlers
    launch = f"`butler up --roster` of {count} butlers"
    return [
        Row(
            f"`butler up` of {count} butlers to every /health",
            ours.seconds * 1000,
            ref.seconds * 1000,
            "a roster of one",
            goal=at_most(5000, "ms") if full else None,
            measures=f"from launching {launch} (a new interpreter; schemas already migrated) "
            "until each butler's /health answered 200, polled in turn every 10 ms; the "
            "reference a roster of one started the same way, in the same run",
        ),
        Row(
            f"RSS MB of `butler up` with {count} butlers",
            ours.rss_mb,
            ref.rss_mb,
            "a roster of one",
            unit="MB",
            goal=at_most(150, "MB") if full else None,
            measures=f"RSS of the {launch} process plus every live descendant (none expected: "
            "no session runs), read from /proc once every /health answered, before any call",
        ),
        Row(
            f"PostgreSQL connections of `butler up` with {count} butlers",
            ours.peak_connections,
            ref.peak_connections,
            "a roster of one",
            unit="conns",
            measures=f"the most established TCP connections the {launch} process held to the "
            "server's "
            f"port while starting, sampled every 10 ms from its sockets ({ours.connections} "
            f"still open once every /health answered); {design(count)}",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--butlers", type=int, default=100)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    print(f"load {os.getloadavg()}")
    print(table(measure(args.database_url, args.butlers), verdicts=True))
    print(f"load at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
