"""``butler up`` and ``butler list``: a whole roster in one real process."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import (
    DaemonProcess,
    free_port,
    get_json,
    wait_until,
    write_butler,
)
from tests.rosters import (
    butler_cli,
    call,
    gated_runtime,
    healthy,
    release,
    roster_up,
    session_statuses,
    table_rows,
    wait_healthy,
)

pytestmark = pytest.mark.slow

SCHEDULE = """
[[butler.schedule]]
name = "morning"
cron = "0 8 * * *"
prompt = "Good morning."
"""


@pytest.fixture
def four(roster: Path, schemas: list[str]) -> dict[str, int]:
    """A roster of four butlers on free ports; returns their ports by name."""
    ports = {}
    for name, schema in zip(("alpha", "beta", "gamma", "delta"), schemas, strict=True):
        ports[name] = free_port()
        extra = SCHEDULE if name == "alpha" else ""
        write_butler(roster, name, port=ports[name], schema=schema, extra=extra)
    return ports


def refused(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_up_serves_three_butlers_from_one_process_each_in_its_own_schema(roster, four, tmp_path):
    log = tmp_path / "up.log"
    only = ["--only", "alpha,beta,gamma", "--database-url", TEST_DSN]
    with roster_up(roster, log, *only, env=dict(os.environ)) as proc:
        up = [four["alpha"], four["beta"], four["gamma"]]
        wait_healthy(proc, up, log)
        for name in ("alpha", "beta", "gamma"):
            assert get_json(f"http://127.0.0.1:{four[name]}/health")[1]["butler"] == name
        assert refused(four["delta"])

        asyncio.run(call(four["alpha"], "state_set", key="secret", value={"only": "alpha"}))
        assert asyncio.run(call(four["alpha"], "state_get", key="secret")) == {"only": "alpha"}
        assert asyncio.run(call(four["beta"], "state_get", key="secret")) is None
        schedules = asyncio.run(call(four["alpha"], "schedule_list"))
        assert [s["name"] for s in schedules] == ["morning"]

        listed = butler_cli("list", "--roster", str(roster))
        assert listed.returncode == 0, listed.stderr
        rows = table_rows(listed.stdout)
        assert rows["alpha"] == ["alpha", str(four["alpha"]), "claude-code", "1", "up", "-"]
        assert [rows[n][-2] for n in ("beta", "gamma", "delta")] == ["up", "up", "down"]

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert all(refused(p) for p in up)
    # Not a terminal: one JSON object per line, and uvicorn's lines name their butler.
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    started = [ln["butler"] for ln in lines if ln["event"] == "Application startup complete."]
    assert sorted(started) == ["alpha", "beta", "gamma"]


@pytest.fixture
def open_data_dir() -> Iterator[Path]:
    """A data folder of its own (a short path: the server's socket goes in it)."""
    folder = Path(tempfile.mkdtemp(prefix="butler-up-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_up_with_no_database_shares_one_embedded_postgresql(roster, tmp_path, open_data_dir):
    ports = {name: free_port() for name in ("alpha", "beta", "gamma")}
    for name, port in ports.items():
        write_butler(roster, name, port=port)
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["BUTLER_DATA_DIR"] = str(open_data_dir)
    log = tmp_path / "up.log"
    with roster_up(roster, log, env=env) as proc:
        wait_healthy(proc, list(ports.values()), log)
        asyncio.run(call(ports["alpha"], "state_set", key="k", value=1))
        assert asyncio.run(call(ports["gamma"], "state_get", key="k")) is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    assert log.read_text().count("embedded database started") == 1
    pgdata = open_data_dir / "pgdata"
    assert pgdata.is_dir()
    assert not (pgdata / "postmaster.pid").exists()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_lets_every_butlers_running_session_finish(roster, schemas, tmp_path, stop):
    ports = {"alpha": free_port(), "beta": free_port()}
    gates = {name: tmp_path / f"{name}.gate" for name in ports}
    for (name, port), schema in zip(ports.items(), schemas, strict=False):
        runtime = gated_runtime(gates[name])
        write_butler(roster, name, port=port, schema=schema, runtime=runtime, extra=SCHEDULE)
    log = tmp_path / "up.log"
    with roster_up(roster, log, "--database-url", TEST_DSN, env=dict(os.environ)) as proc:
        wait_healthy(proc, list(ports.values()), log)
        for port in ports.values():
            asyncio.run(call(port, "schedule_run", name="morning"))
        for schema in schemas[:2]:
            wait_until(lambda s=schema: asyncio.run(session_statuses(s)) == ["running"])
        proc.send_signal(stop)
        # The sessions can only end now, after the signal: the drain waited for them.
        for gate in gates.values():
            release(gate)
        assert proc.wait(timeout=60) == 0, log.read_text()
    for schema in schemas[:2]:
        assert asyncio.run(session_statuses(schema)) == ["succeeded"]


def test_up_refuses_two_butlers_on_one_port_in_one_line(roster):
    port = free_port()
    write_butler(roster, "alpha", port=port)
    write_butler(roster, "beta", port=port)
    result = butler_cli("up", "--roster", str(roster))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"port {port} is claimed by both alpha" in lines[0]
    assert "and beta" in lines[0]


def test_up_names_an_unknown_butler_and_the_known_ones(roster):
    write_butler(roster, "alpha", port=free_port())
    result = butler_cli("up", "--roster", str(roster), "--only", "alpha,zeta")
    assert result.returncode == 2
    assert "no butler named 'zeta'" in result.stderr
    assert "expected some of alpha" in result.stderr


def test_up_says_which_butler_cannot_have_its_port(roster, schemas):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        write_butler(roster, "alpha", port=port, schema=schemas[0])
        result = butler_cli("up", "--roster", str(roster), "--database-url", TEST_DSN)
    assert result.returncode == 2
    line = result.stderr.strip()
    assert line.startswith(f"butler: error: alpha: port {port} is taken by pid {os.getpid()} (")
    assert line.endswith(f"stop it, or choose [butler] port in {roster}/alpha/butler.toml")


def test_up_names_the_butler_another_daemon_serves_and_leaves_the_others_schemas_free(
    roster, schemas, tmp_path
):
    """One butler refused its schema: one line naming it; the others' are closed again."""
    write_butler(roster, "alpha", port=free_port(), schema=schemas[0])
    write_butler(roster, "beta", port=free_port(), schema=schemas[1])
    env = {**os.environ, "BUTLER_ALLOW_ROOT": "1", "BUTLER_DATA_DIR": str(tmp_path / "data")}
    with DaemonProcess(roster / "beta", port=free_port(), database_url=TEST_DSN, env=env):
        result = butler_cli(
            "up", "--roster", str(roster), "--database-url", TEST_DSN, "--log-level", "warning"
        )
    assert result.returncode == 1
    line = result.stderr.strip()
    assert "\n" not in line and "beta: already served by pid" in line, result.stderr
    # alpha's database was opened beside beta's and closed: another daemon may take it.
    with DaemonProcess(roster / "alpha", port=free_port(), database_url=TEST_DSN, env=env) as alpha:
        assert healthy(alpha.port)
