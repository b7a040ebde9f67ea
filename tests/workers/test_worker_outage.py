"""A session that ends on a worker while the database is away: its result waits on the
worker and reaches the daemon once the database is back; nothing is lost or run twice."""

from __future__ import annotations

import asyncio
import contextlib
import json

import asyncpg
import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import butler_client, eventually, free_port
from tests.workers.machines import machine
from tests.workers.tester import (
    LinkDaemon,
    link_butler,
    link_worker,
    output_of,
    probe_butler,
    worker_log,
)

pytestmark = pytest.mark.slow

#: What the worker logs once a hand-back of a result has failed for want of the database.
AWAY = "the session's result waits on this worker"


async def test_a_result_made_during_a_database_outage_reaches_the_caller_once_it_is_back(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    try:
        with machine() as place:
            port = free_port()
            folder = probe_butler(tmp_path / "roster", place.peer, port)
            starts, done = folder / "starts.txt", folder / "done"
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            try:
                worker = link_worker(place, folder.parent, dsn, tmp_path / "data")
                plan = {"starts": str(starts), "sleep": 2, "done": str(done)}
                async with butler_client(f"{daemon.url}/mcp", timeout=180) as client:
                    call = asyncio.create_task(
                        client.call_tool("trigger", {"prompt": json.dumps(plan)})
                    )
                    await eventually(starts.is_file, timeout=60)
                    await server.stop()
                    await eventually(done.is_file, timeout=60)  # it ended with no database
                    # The worker has tried to hand the result back, and failed.
                    await eventually(lambda: AWAY in worker_log(tmp_path / "data"), timeout=60)
                    server = EmbeddedPostgres(own_postgres)
                    await server.start()
                    answer = (await asyncio.wait_for(call, 150)).structured_content
                    row = await client.call_tool(
                        "session_get", {"session_id": answer["session_id"]}
                    )
                    # And the worker takes work again.
                    after = await asyncio.wait_for(
                        client.call_tool("trigger", {"prompt": json.dumps({})}), 150
                    )
            finally:
                if worker is not None:
                    worker.terminate()
                    output = output_of(worker, tmp_path / "data")
                    (tmp_path / "worker.log").write_text(output)
                daemon.stop()
        assert answer["success"], answer
        assert json.loads(answer["output"].splitlines()[-1])["pid"]
        assert row.structured_content["status"] == "succeeded"
        assert starts.read_text().count("\n") == 1  # run once
        assert list((tmp_path / "data" / "workers" / "running").glob("*")) == []
        assert after.structured_content["success"], after.structured_content
    finally:
        await server.stop()


@pytest.mark.parametrize("outage_s", [5, 20, 90])
async def test_a_worker_outage_cutting_its_queue_lookup_pauses_it_and_it_runs_held_and_new_work(
    own_postgres, tmp_path, outage_s
):
    """The database goes away while the worker holds a running session; meanwhile its
    main loop looks at the queue (by chance under load, or at its next poll: the worker
    ended, and took no work until restarted by hand). A poll of 1 s makes it look during
    any outage."""
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    try:
        with machine() as place:
            port = free_port()
            folder = probe_butler(tmp_path / "roster", place.peer, port)
            starts, done = folder / "starts.txt", folder / "done"
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            try:
                worker = link_worker(
                    place, folder.parent, dsn, tmp_path / "data", args=("--poll", "1")
                )
                plan = {"starts": str(starts), "sleep": 3, "done": str(done)}
                async with butler_client(f"{daemon.url}/mcp", timeout=300) as client:
                    held = asyncio.create_task(
                        client.call_tool("trigger", {"prompt": json.dumps(plan)})
                    )
                    await eventually(starts.is_file, timeout=120)
                    await server.stop()
                    await asyncio.sleep(outage_s)
                    assert worker.poll() is None, "the worker ended during the outage"
                    server = EmbeddedPostgres(own_postgres)
                    await server.start()
                    answer = (await asyncio.wait_for(held, 250)).structured_content
                    after = await asyncio.wait_for(
                        client.call_tool("trigger", {"prompt": json.dumps({})}), 250
                    )
                    alive = worker.poll() is None
            finally:
                if worker is not None:
                    worker.terminate()
                    output = output_of(worker, tmp_path / "data")
                    (tmp_path / "worker.log").write_text(output)
                daemon.stop()
        assert alive, "the worker ended after the outage"
        assert answer["success"], answer
        assert starts.read_text().count("\n") == 1  # the held session ran once
        assert after.structured_content["success"], after.structured_content
    finally:
        await server.stop()


async def _claimed(dsn: str, prompt: str) -> bool:
    conn = await asyncpg.connect(dsn)
    try:
        return bool(
            await conn.fetchval(
                "SELECT metadata ? 'worker' FROM workers_test.sessions WHERE prompt = $1", prompt
            )
        )
    finally:
        await conn.close()


async def test_after_a_database_outage_a_worker_is_woken_by_new_work_again_not_by_its_poll(
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
                # PgQueuer's poll made longer than the test: only a NOTIFY brings it work.
                slow_poll = ("--poll", "3600")
                worker = link_worker(place, folder.parent, dsn, tmp_path / "data", args=slow_poll)
                async with butler_client(f"{daemon.url}/mcp", timeout=180) as client:
                    before = await client.call_tool("trigger", {"prompt": "before"})
                    assert before.structured_content["success"], before.structured_content
                    await server.stop()  # the worker's LISTEN connection is cut
                    server = EmbeddedPostgres(own_postgres)
                    await server.start()
                    call = asyncio.create_task(client.call_tool("trigger", {"prompt": "after"}))
                    try:
                        await eventually(lambda: _claimed(dsn, "after"), timeout=90, interval=0.2)
                    finally:
                        call.cancel()
                        with contextlib.suppress(BaseException):
                            await call
            finally:
                if worker is not None:
                    worker.terminate()
                    output = output_of(worker, tmp_path / "data")
                    (tmp_path / "worker.log").write_text(output)
                daemon.stop()
    finally:
        await server.stop()
