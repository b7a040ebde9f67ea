"""The suite sets up its own PostgreSQL on a machine that has none."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import asyncpg
import psutil
import pytest

from tests.database import PORT_VARIABLE, REFUSE_VARIABLE, SuiteDatabase
from tests.helpers import REPO, free_port

#: The inner run's tests append "<worker> <dsn>" here, to show which server each used.
RECORD_VARIABLE = "BUTLER_TEST_RECORD_DSN"


@pytest.mark.parametrize("run", range(4))
def test_the_suite_database_answers(pg_dsn, run):
    async def ask() -> int:
        conn = await asyncpg.connect(pg_dsn)
        try:
            return await conn.fetchval("SELECT 1")
        finally:
            await conn.close()

    assert asyncio.run(ask()) == 1
    record = os.environ.get(RECORD_VARIABLE)
    if record:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(record, "a", encoding="utf-8") as out:
            out.write(f"{worker} {pg_dsn}\n")


def embedded_servers() -> set[str]:
    """The data folders of the suite's embedded PostgreSQL servers running now."""
    found = set()
    for proc in psutil.process_iter(["name", "cmdline"]):
        for part in proc.info["cmdline"] or []:
            if proc.info["name"] == "postgres" and "butler-test-pg-" in part:
                found.add(part)
    return found


@pytest.mark.slow
@pytest.mark.timeout(900)  # a whole pytest run inside, on a machine that may be busy
def test_with_no_server_the_suite_starts_one_embedded_postgres_and_stops_it(tmp_path):
    record = tmp_path / "dsns.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("TEST_DATABASE_URL", None)
    env[PORT_VARIABLE] = str(free_port())  # nothing answers there
    env[RECORD_VARIABLE] = str(record)
    before = embedded_servers()
    tests = [f"{Path(__file__).relative_to(REPO)}", "tests/test_migrations.py"]
    # "not slow": this very test must not run itself again inside.
    argv = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider"]
    proc = subprocess.Popen(
        [*argv, "-m", "not slow", *tests],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=840)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, output[-4000:]
    lines = record.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    dsns = {line.split(" ", 1)[1] for line in lines}
    assert len(dsns) == 1, f"the workers used different servers: {dsns}"
    socket_dir = dsns.pop().rpartition("host=")[2]
    assert "butler-test-pg-" in socket_dir, f"not the embedded server: {socket_dir}"
    assert embedded_servers() == before, "the embedded server was left running"
    assert not Path(socket_dir).exists()


def without_a_database(tmp_path: Path) -> dict[str, str]:
    """An environment where no server answers and an embedded one would start under tmp_path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.pop("TEST_DATABASE_URL", None)
    env[PORT_VARIABLE] = str(free_port())  # nothing answers there
    env["TMPDIR"] = str(tmp_path)  # where the run's embedded server would keep its files
    return env


#: Run in a fresh interpreter: imports the suite's conftest, then lists the PostgreSQL
#: servers keeping their files under TMPDIR (none unless the import started one).
IMPORT_CONFTEST = """
import os, psutil
import tests.conftest
tmp = os.environ["TMPDIR"]
print([p.pid for p in psutil.process_iter(["name", "cmdline"])
       if p.info["name"] == "postgres" and any(tmp in a for a in p.info["cmdline"] or [])])
"""


def test_loading_the_suite_fixtures_starts_no_database(tmp_path):
    env = without_a_database(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_CONFTEST],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", "importing the fixtures started a PostgreSQL"


def test_a_run_told_to_use_no_database_refuses_the_test_that_asks(monkeypatch):
    monkeypatch.setenv(REFUSE_VARIABLE, "1")
    with pytest.raises(RuntimeError, match=REFUSE_VARIABLE):
        SuiteDatabase().dsn()


@pytest.mark.slow
@pytest.mark.timeout(600)  # the whole unit tier inside, on a machine that may be busy
def test_the_unit_tier_passes_with_no_database_at_all(tmp_path):
    env = {**without_a_database(tmp_path), REFUSE_VARIABLE: "1"}
    argv = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*argv, "tests/unit"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:]
    assert " passed" in done.stdout
    assert not list(tmp_path.glob("butler-test-pg-*")), "a server folder was made"
