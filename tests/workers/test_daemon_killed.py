"""A daemon killed (``kill -9``) while a worker holds one of its sessions: the next start
waits for that session again instead of failing it, so the worker's result completes
its row and the runtime's calls to its butler work again; one whose bound passed while no
daemon ran fails saying so; a session that no worker was given is failed as before."""

from __future__ import annotations

import contextlib
import json
import subprocess
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import pytest

from butler.spawner.recovery import LEFT_OPEN
from butler.store.db import quote_ident
from butler.store.embedded import EmbeddedPostgres
from tests.conftest import TEST_DSN
from tests.helpers import DaemonProcess, butler_client, eventually, free_port
from tests.helpers import write_butler as write_local_butler
from tests.workers.fleet import (
    fetch,
    held_runtime,
    route_to_daemon,
    start_daemon,
    start_worker,
    stop,
    write_butler,
)
from tests.workers.machines import Machine, machine

pytestmark = pytest.mark.slow


async def _start(url: str, prompt: str) -> str:
    """Start a session and return its id at once (the daemon is killed under it)."""
    async with butler_client(f"{url}/mcp", timeout=60) as client:
        result = await client.call_tool("session_start", {"prompt": prompt})
    return result.data["session_id"]


async def _row(dsn: str, sid: str) -> dict:
    rows = await fetch(
        dsn,
        "SELECT status, output, error, tool_calls, metadata->>'worker' AS worker"
        " FROM sessions WHERE id = $1",
        uuid.UUID(sid),
    )
    row = dict(rows[0])
    row["tool_calls"] = json.loads(row["tool_calls"])
    return row


async def _ended(dsn: str, sid: str) -> dict | None:
    row = await _row(dsn, sid)
    return row if row["status"] not in ("pending", "running") else None


def _kill(daemon: DaemonProcess) -> None:
    """``kill -9``: no drain, no completion, nothing written on the way out."""
    assert daemon.proc is not None
    daemon.proc.kill()
    daemon.proc.wait(30)


@dataclass
class _Scene:
    """A butler whose sessions go to workers, over a PostgreSQL of the test's own, and
    a worker's machine beside it; what it starts is stopped when the test ends."""

    dsn: str
    place: Machine
    roster: Path
    folder: Path
    port: int
    data: Path
    daemons: list[DaemonProcess] = field(default_factory=list)
    worker: subprocess.Popen[str] | None = None

    def daemon(self) -> DaemonProcess:
        self.daemons.append(start_daemon(self.folder, self.port, self.dsn))
        return self.daemons[-1]

    def start_worker(self) -> subprocess.Popen[str]:
        self.worker = start_worker(self.place, self.roster, self.dsn, self.data / "worker")
        return self.worker


@contextlib.asynccontextmanager
async def _scene(own_postgres: Path, tmp_path: Path, command: list[str]) -> AsyncIterator[_Scene]:
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    try:
        with machine() as place:
            route_to_daemon(place)
            port = free_port()
            folder = write_butler(roster, port, f"http://{place.peer}:{port}", command)
            scene = _Scene(dsn, place, roster, folder, port, tmp_path)
            try:
                yield scene
            finally:
                stop(scene.worker)
                for daemon in reversed(scene.daemons):
                    daemon.stop()
    finally:
        await server.stop()


async def test_a_killed_daemons_session_on_a_worker_completes_after_the_restart_with_its_tools(
    own_postgres, tmp_path
):
    release = tmp_path / "release"
    # The runtime calls state_set only once released: after the daemon is back.
    command = held_runtime(tmp_path / "roster", release)
    try:
        async with _scene(own_postgres, tmp_path, command) as scene:
            dsn, daemon = scene.dsn, scene.daemon()
            worker = scene.start_worker()
            sid = await _start(daemon.url, "survivor")
            await eventually(lambda: _picked(dsn, sid), timeout=60, interval=0.2)
            _kill(daemon)
            again = scene.daemon()
            release.touch()
            row = await eventually(lambda: _ended(dsn, sid), timeout=40, interval=0.2)
            assert row["status"] == "succeeded", (row, again.logs())
            assert row["output"].strip() == f"http://{scene.place.peer}:{scene.port}/mcp"
            assert row["worker"].endswith(f":{worker.pid}")
            # The call the runtime made to the new daemon, with the old daemon's token.
            assert [c["name"] for c in row["tool_calls"]] == ["state_set"]
            state = await fetch(dsn, "SELECT value FROM state WHERE key = 'survivor'")
            assert [json.loads(s["value"]) for s in state] == ["called"]
            assert await fetch(dsn, "SELECT * FROM session_results") == []
            assert await fetch(dsn, "SELECT * FROM pgqueuer") == []
    finally:
        release.touch()  # a runtime still held ends


async def test_a_result_handed_back_while_no_daemon_ran_is_recorded_at_the_next_start(
    own_postgres, tmp_path
):
    release = tmp_path / "release"
    # Calls nothing: it ends, and its worker hands the result back, with no daemon up.
    offline = ["bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done; echo done offline"]
    try:
        async with _scene(own_postgres, tmp_path, offline) as scene:
            dsn, daemon = scene.dsn, scene.daemon()
            scene.start_worker()
            sid = await _start(daemon.url, "offline")
            await eventually(lambda: _picked(dsn, sid), timeout=60, interval=0.2)
            _kill(daemon)
            release.touch()
            waiting = await eventually(
                lambda: fetch(dsn, "SELECT worker FROM session_results"), timeout=30
            )
            assert (await _row(dsn, sid))["status"] == "running"  # nobody recorded it
            again = scene.daemon()
            row = await eventually(lambda: _ended(dsn, sid), timeout=30, interval=0.2)
            assert row["status"] == "succeeded", (row, again.logs())
            assert row["output"].strip() == "done offline"
            assert row["worker"] == waiting[0]["worker"]
            assert await fetch(dsn, "SELECT * FROM session_results") == []
    finally:
        release.touch()


async def test_a_job_whose_session_its_daemon_closed_is_never_run_by_a_worker(
    own_postgres, tmp_path
):
    """A job left in the queue after its row was closed (a withdrawal that failed at the
    session's bound) is taken by the next worker and dropped: its runtime never starts."""
    release = tmp_path / "release"
    release.touch()  # the runtime would call state_set as soon as it ran
    command = held_runtime(tmp_path / "roster", release)
    async with _scene(own_postgres, tmp_path, command) as scene:
        dsn = scene.dsn
        sid = await _start(scene.daemon().url, "closed")  # no worker yet: it waits queued
        await eventually(lambda: fetch(dsn, "SELECT id FROM pgqueuer"), timeout=30)
        await fetch(
            dsn,
            "UPDATE sessions SET status = 'failed', error = 'given up',"
            " completed_at = now() WHERE id = $1",
            uuid.UUID(sid),
        )
        scene.start_worker()
        picked = "SELECT 1 FROM pgqueuer_log WHERE status = 'successful'"
        await eventually(lambda: fetch(dsn, picked), timeout=60, interval=0.2)
        assert await fetch(dsn, "SELECT * FROM state") == []
        # Not started and then ended by the watch of its row (which looks every 2 s,
        # time enough for a runtime to act): never started.
        said = (tmp_path / "worker" / "worker.log").read_text()
        assert "session closed before it was picked: not run" in said, said
        assert "closed while it ran here" not in said, said
        row = await _row(dsn, sid)
        assert row["status"] == "failed" and row["error"] == "given up", row


def _lone_butler(tmp_path: Path, schema: str) -> DaemonProcess:
    """A butler of one slot whose sessions go to workers; none runs here, so a session
    handed over stays in the queue."""
    port = free_port()
    runtime = {
        "type": "command",
        "command": ["echo", "hi"],
        "workers": "remote",
        "max_concurrent_sessions": 1,
        "timeout_s": 60,
    }
    folder = write_local_butler(
        tmp_path / "roster", "lone", port=port, schema=schema, runtime=runtime
    )
    toml = folder / "butler.toml"
    toml.write_text(toml.read_text().replace("port = ", "shutdown_timeout_s = 1\nport = ", 1))
    return DaemonProcess(folder, port=port, database_url=TEST_DSN)


async def test_after_a_kill_only_the_session_no_worker_was_given_is_failed_as_left_open(
    schema_name, tmp_path
):
    """One slot: the first session is handed to the workers (none runs: its job stays
    queued), the second waits for the slot in the daemon. After the kill the first is
    still the workers' to run; the second was never handed over and is failed."""
    first = _lone_butler(tmp_path, schema_name).start()
    second = None
    try:
        await _start(first.url, "handed")
        await _start(first.url, "waiting")
        queue = f"{quote_ident(schema_name)}.pgqueuer"
        await eventually(lambda: _one(f"SELECT id FROM {queue}"), timeout=30)
        _kill(first)
        second = _lone_butler(tmp_path, schema_name).start()
        rows = {
            r["prompt"]: r
            for r in await _all(
                f"SELECT prompt, status, error FROM {quote_ident(schema_name)}.sessions"
            )
        }
        assert rows["waiting"]["status"] == "failed", rows
        assert rows["waiting"]["error"] == LEFT_OPEN
        assert rows["handed"]["status"] == "running", (rows, second.logs())
        assert await _one(f"SELECT id FROM {queue}") is not None  # a worker may still run it
    finally:
        for each in (second, first):
            if each is not None:
                each.stop()


async def test_a_start_that_never_serves_leaves_the_sessions_it_took_back_open(
    schema_name, tmp_path
):
    """A start that fails after its butlers were assembled (another butler of the roster
    refused, say) must not end what it took back from the workers: their rows stay open,
    their jobs queued, for the next start."""
    from butler.config import load_config
    from butler.daemon import assemble
    from butler.store.opening import open_store

    first = _lone_butler(tmp_path, schema_name).start()
    sessions, queue = (f"{quote_ident(schema_name)}.{table}" for table in ("sessions", "pgqueuer"))
    try:
        await _start(first.url, "handed")
        await eventually(lambda: _one(f"SELECT id FROM {queue}"), timeout=30)
        _kill(first)
        config = load_config(first.config_dir, db_url=TEST_DSN)
        opened = await open_store(config.essentials())
        try:
            butler = await assemble(config, opened.db)  # recovers, takes the session back
            await butler.spawner.drain(1)  # and the start ends before serving
        finally:
            await opened.close()
        row = await _one(f"SELECT status, error FROM {sessions}")
        assert row["status"] == "running", row
        assert await _one(f"SELECT id FROM {queue}") is not None  # still the workers' to run
    finally:
        first.stop()


async def test_a_handed_session_past_its_time_limit_at_the_restart_fails_saying_no_worker_came(
    schema_name, tmp_path
):
    first = _lone_butler(tmp_path, schema_name).start()
    second = None
    sessions, queue = (f"{quote_ident(schema_name)}.{table}" for table in ("sessions", "pgqueuer"))
    try:
        await _start(first.url, "late")
        await eventually(lambda: _one(f"SELECT id FROM {queue}"), timeout=30)
        _kill(first)
        # As if the daemon had stayed away past the session's bound (60 s and the grace).
        await _all(f"UPDATE {sessions} SET started_at = now() - interval '1 hour'")
        second = _lone_butler(tmp_path, schema_name).start()
        row = await eventually(
            lambda: _one(f"SELECT status, error FROM {sessions} WHERE status = 'failed'"),
            timeout=30,
        )
        assert row["error"].startswith(
            "no worker reported this session within 120 s of its start (its daemon restarted"
        ), row["error"]
        assert await _one(f"SELECT id FROM {queue}") is None  # no worker runs it now
    finally:
        for each in (second, first):
            if each is not None:
                each.stop()


async def _picked(dsn: str, sid: str) -> bool:
    """Whether a worker claimed the session (its runtime starts right after)."""
    return bool((await _row(dsn, sid))["worker"])


async def _one(query: str) -> asyncpg.Record | None:
    conn = await asyncpg.connect(TEST_DSN)
    try:
        return await conn.fetchrow(query)
    finally:
        await conn.close()


async def _all(query: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(TEST_DSN)
    try:
        return await conn.fetch(query)
    finally:
        await conn.close()
