"""What the database's URL alone gives against a butler on workers: a queued job holds no
token to call the butler with, and a result written for a session no worker claimed is
refused in one line; the genuine worker's result is the one the caller gets."""

from __future__ import annotations

import asyncio
import json

import asyncpg
import pytest

from butler.store.embedded import EmbeddedPostgres
from butler.store.session_jobs import RESULTS_CHANNEL
from tests.helpers import butler_client, eventually, free_port
from tests.workers.machines import machine
from tests.workers.tester import LinkDaemon, link_butler, link_worker, output_of

pytestmark = pytest.mark.slow

FORGED = {"status": "succeeded", "result": {"output": "FORGED RESULT"}}


async def _queued(dsn: str) -> tuple[str, dict] | None:
    """The queued session's id and its job's payload, once the daemon queued it."""
    conn = await asyncpg.connect(dsn)
    try:
        payload = await conn.fetchval(
            "SELECT payload FROM workers_test.pgqueuer WHERE status = 'queued' LIMIT 1"
        )
        if payload is None:
            return None
        job = json.loads(bytes(payload))
        return job["session"]["id"], job
    finally:
        await conn.close()


async def _forge(dsn: str, session_id: str) -> None:
    """What an attacker with the database's URL and no worker writes: a succeeded result
    for the session, and the wake-up."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "INSERT INTO workers_test.session_results (session_id, worker, result)"
            " VALUES ($1::uuid, 'attacker:1', $2::jsonb)",
            session_id,
            json.dumps(FORGED),
        )
        await conn.execute(
            "SELECT pg_notify($1, $2)", RESULTS_CHANNEL, f"workers_test:{session_id}"
        )
    finally:
        await conn.close()


async def _results(dsn: str) -> int:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval("SELECT count(*) FROM workers_test.session_results")
    finally:
        await conn.close()


async def test_a_result_forged_for_an_unclaimed_job_is_refused_and_the_workers_one_answers(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    try:
        with machine() as place:
            port = free_port()
            folder = link_butler(tmp_path / "roster", place.peer, port)
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            try:
                async with butler_client(f"{daemon.url}/mcp", timeout=300) as client:
                    call = asyncio.create_task(client.call_tool("trigger", {"prompt": "greeting"}))
                    session_id, job = await eventually(lambda: _queued(dsn), timeout=60)
                    # Nothing in the queued job opens the butler: no token rides with it.
                    assert set(job) == {"session"}, job
                    assert "token" not in json.dumps(job)
                    await _forge(dsn, session_id)
                    await eventually(lambda: "refused a result" in daemon.logs(), timeout=60)
                    assert not call.done()
                    assert await _results(dsn) == 0  # dropped
                    # The job stayed queued: a genuine worker runs it, and its result counts.
                    worker = link_worker(place, folder.parent, dsn, tmp_path / "data")
                    answer = (await asyncio.wait_for(call, 250)).structured_content
            finally:
                if worker is not None:
                    worker.terminate()
                    (tmp_path / "worker.log").write_text(output_of(worker, tmp_path / "data"))
                logs = daemon.logs()
                daemon.stop()
        assert answer["success"], answer
        assert answer["output"].strip() == "worker says hi"
        refusals = [line for line in logs.splitlines() if "refused a result" in line]
        assert len(refusals) == 1 and "attacker:1" in refusals[0], refusals
    finally:
        await server.stop()
