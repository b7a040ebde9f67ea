"""``butler run`` as a real process, driven through ``fastmcp.Client`` over both transports."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import select
import shutil
import signal
import socket
import subprocess
import time
import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import psutil
import pytest

from butler import __version__
from tests.helpers import (
    REPO,
    DaemonProcess,
    butler_client,
    free_port,
    get_json,
    wait_until,
    write_butler,
)

pytestmark = pytest.mark.slow

TRANSPORTS = ["mcp", "sse"]


async def call(url: str, tool: str, **arguments: Any) -> Any:
    """Call one tool in a fresh MCP session, as a separate client would."""
    async with butler_client(url) as client:
        return (await client.call_tool(tool, arguments)).data


def tool(url: str, name: str, **arguments: Any) -> Any:
    return asyncio.run(call(url, name, **arguments))


def daemon_for(folder: Path, dsn: str | None, **kwargs: Any) -> DaemonProcess:
    port = tomllib.loads((folder / "butler.toml").read_text())["butler"]["port"]
    return DaemonProcess(folder, port=port, database_url=dsn, **kwargs)


@pytest.fixture
def daemon(butler_dir: Path, pg_dsn: str) -> Iterator[DaemonProcess]:
    with daemon_for(butler_dir, pg_dsn) as running:
        yield running


@pytest.fixture
def other_schema(pg_dsn: str) -> Iterator[str]:
    """A second fresh schema, for a second butler on the same server."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name

    async def drop() -> None:
        conn = await asyncpg.connect(pg_dsn)
        try:
            await conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        finally:
            await conn.close()

    asyncio.run(drop())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_state_tools_over_each_transport(daemon, transport):
    url = f"{daemon.url}/{transport}"
    value = {"dose": "200mg", "times": [8, 20], "with_food": True, "note": "après le repas"}
    assert tool(url, "state_set", key="meds/ibuprofen", value=value) == {
        "key": "meds/ibuprofen",
        "stored": True,
        "version": 1,
    }
    tool(url, "state_set", key="meds/iron", value=65)
    tool(url, "state_set", key="mood", value="fine")

    assert tool(url, "state_get", key="meds/ibuprofen") == value
    assert tool(url, "state_list", prefix="meds/") == {"meds/ibuprofen": value, "meds/iron": 65}
    assert tool(url, "state_delete", key="meds/iron") == {"key": "meds/iron", "deleted": True}
    assert tool(url, "state_delete", key="meds/iron") == {"key": "meds/iron", "deleted": False}
    assert tool(url, "state_get", key="meds/iron") is None
    assert set(tool(url, "state_list")) == {"meds/ibuprofen", "mood"}

    status = tool(url, "status")
    assert status["butler"] == "tester"
    assert status["status"] == "ok"
    assert status["database"] is True
    assert status["sessions_in_flight"] == 0


def test_both_transports_share_one_state(daemon):
    tool(f"{daemon.url}/mcp", "state_set", key="shared", value={"items": [1, 2, 3]})
    assert tool(f"{daemon.url}/sse", "state_get", key="shared") == {"items": [1, 2, 3]}


def test_state_get_gives_back_any_json_value(daemon):
    url = f"{daemon.url}/mcp"
    for value in ([1, 2, 3], 65, "65", True):
        tool(url, "state_set", key="k", value=value)
        assert tool(url, "state_get", key="k") == value


def test_a_value_survives_a_daemon_restart(butler_dir, pg_dsn):
    first = daemon_for(butler_dir, pg_dsn).start()
    try:
        tool(f"{first.url}/mcp", "state_set", key="streak", value={"days": 12})
    finally:
        assert first.stop() == 0
    with daemon_for(butler_dir, pg_dsn) as second:
        assert tool(f"{second.url}/sse", "state_get", key="streak") == {"days": 12}


def test_health_reports_name_database_version_and_sessions(daemon):
    # Open to anyone, so it says only that the butler is up.
    status, body = get_json(f"{daemon.url}/health", token=None)
    assert status == 200
    assert body == {"status": "ok", "butler": "tester", "version": __version__}
    # The detail is for the owner.
    status, body = get_json(f"{daemon.url}/api/status")
    assert status == 200
    assert body["database"] is True
    assert body["sessions_in_flight"] == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_sigterm_stops_promptly_with_a_client_connected(daemon, transport):
    outcome: dict[str, float] = {}
    with contextlib.suppress(Exception):  # the client loses its server mid-session, as it should
        async with butler_client(f"{daemon.url}/{transport}") as client:
            await client.call_tool("status", {})
            started = time.monotonic()
            daemon.proc.send_signal(signal.SIGTERM)
            outcome["code"] = await asyncio.to_thread(daemon.proc.wait, 30)
            outcome["seconds"] = time.monotonic() - started
    assert outcome["code"] == 0, daemon.logs()
    assert outcome["seconds"] < 10
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", daemon.port), timeout=2).close()


def test_two_butlers_on_one_server_cannot_see_each_others_state(
    roster, schema_name, other_schema, pg_dsn
):
    alpha_dir = write_butler(roster, "alpha", port=free_port(), schema=schema_name)
    beta_dir = write_butler(roster, "beta", port=free_port(), schema=other_schema)
    with daemon_for(alpha_dir, pg_dsn) as alpha, daemon_for(beta_dir, pg_dsn) as beta:
        tool(f"{alpha.url}/mcp", "state_set", key="diary/today", value={"by": "alpha"})
        assert tool(f"{beta.url}/mcp", "state_get", key="diary/today") is None
        assert tool(f"{beta.url}/sse", "state_list", prefix="") == {}
        tool(f"{beta.url}/sse", "state_set", key="diary/today", value={"by": "beta"})
        assert tool(f"{beta.url}/mcp", "state_delete", key="diary/today")["deleted"] is True
        assert tool(f"{alpha.url}/sse", "state_get", key="diary/today") == {"by": "alpha"}


# The embedded database: no URL anywhere, so `butler run` starts its own PostgreSQL.


def postgres_serving(pgdata: Path) -> list[psutil.Process]:
    """The PostgreSQL server processes running on ``pgdata``."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if proc.info["name"] == "postgres" and str(pgdata) in (proc.info["cmdline"] or []):
                found.append(proc)
    return found


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A butler data folder inside pytest's private (0700) temp tree, as a home is."""
    path = tmp_path / "data"
    yield path
    for proc in postgres_serving(path / "pgdata"):  # a failed test leaves nothing running
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGQUIT)
            proc.wait(10)
    shutil.rmtree(path, ignore_errors=True)


def embedded_daemon(folder: Path, data: Path) -> DaemonProcess:
    daemon = daemon_for(folder, None, env={"BUTLER_DATA_DIR": str(data)})
    daemon.env.pop("DATABASE_URL", None)
    return daemon


@pytest.mark.slow
def test_with_no_database_configured_an_embedded_postgresql_serves_and_goes_away(roster, data_dir):
    folder = write_butler(roster, "tester", port=free_port())
    pgdata = data_dir / "pgdata"
    first = embedded_daemon(folder, data_dir).start(timeout=120)
    try:
        assert "embedded database started" in first.logs()
        assert "recovered from an earlier crash" not in first.logs()  # nothing to recover
        # Not a terminal: initdb's wait is one log line, not a spinner.
        assert "initialising the embedded database" in first.logs()
        assert postgres_serving(pgdata)
        tool(f"{first.url}/mcp", "state_set", key="first-run", value={"ok": True})
        assert tool(f"{first.url}/sse", "state_get", key="first-run") == {"ok": True}
        assert get_json(f"{first.url}/api/status")[1]["database"] is True
    finally:
        assert first.stop() == 0
    wait_until(lambda: not postgres_serving(pgdata), timeout=30)

    with embedded_daemon(folder, data_dir) as second:
        assert tool(f"{second.url}/mcp", "state_get", key="first-run") == {"ok": True}
    assert second.proc.returncode == 0
    wait_until(lambda: not postgres_serving(pgdata), timeout=30)


@pytest.mark.slow
def test_a_killed_daemon_does_not_keep_the_embedded_postgresql_running_for_good(roster, data_dir):
    folder = write_butler(roster, "tester", port=free_port())
    pgdata = data_dir / "pgdata"
    crashed = embedded_daemon(folder, data_dir).start(timeout=120)
    tool(f"{crashed.url}/mcp", "state_set", key="before-crash", value={"n": 1})
    crashed.proc.kill()
    crashed.proc.wait(30)
    assert postgres_serving(pgdata)  # nobody was left to stop it

    with embedded_daemon(folder, data_dir) as after:
        assert tool(f"{after.url}/mcp", "state_get", key="before-crash") == {"n": 1}
    assert after.proc.returncode == 0
    wait_until(lambda: not postgres_serving(pgdata), timeout=30)


@pytest.mark.slow
def test_two_clones_in_two_homes_each_start_their_own_butler_of_the_same_name(tmp_path):
    """Two checkouts side by side, each in a home of its own (root's too): each quick start
    gets a database in its own data folder, not one machine-wide server where the second
    clone's ``health`` would find the first's schema and be refused."""
    daemons = []
    try:
        for clone in ("a", "b"):
            home = tmp_path / f"home-{clone}"
            home.mkdir(mode=0o700)
            folder = write_butler(
                tmp_path / f"clone-{clone}" / "roster", "health", port=free_port()
            )
            daemon = daemon_for(folder, None, env={"HOME": str(home)})
            for name in ("DATABASE_URL", "BUTLER_DATA_DIR", "XDG_DATA_HOME"):
                daemon.env.pop(name, None)
            daemons.append(daemon.start(timeout=120))
        for daemon, clone in zip(daemons, "ab", strict=True):
            assert get_json(f"{daemon.url}/api/status")[1]["database"] is True
            pgdata = tmp_path / f"home-{clone}" / ".local" / "share" / "butler" / "pgdata"
            assert postgres_serving(pgdata), f"clone {clone}'s database is not in its home"
    finally:
        for daemon in daemons:
            daemon.stop()


@pytest.mark.slow
def test_a_first_start_on_a_terminal_shows_a_spinner_while_initdb_runs(roster, data_dir):
    folder = write_butler(roster, "tester", port=free_port())
    daemon = embedded_daemon(folder, data_dir)
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        daemon.argv(),
        env=daemon.env,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    seen = bytearray()

    def started() -> bool:
        assert proc.poll() is None, seen.decode(errors="replace")
        if select.select([primary], [], [], 0.2)[0]:
            with contextlib.suppress(OSError):
                seen.extend(os.read(primary, 65536))
        return b"embedded database started" in seen

    try:
        wait_until(started, timeout=120)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        os.close(primary)
    text = seen.decode(errors="replace")
    # The spinner's text (the log line has no ellipsis), drawn while initdb ran.
    assert "initialising the embedded database (first start, a few seconds)…" in text
