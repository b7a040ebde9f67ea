"""Several workers, each on its own "machine" (a network namespace joined by a veth link),
serving one butler: a burst spreads over them, every session is recorded once, and the
butler's limit on sessions at once holds across all of them (read from the database)."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import butler_client, free_port
from tests.workers.fleet import (
    fetch,
    most_at_once,
    route_to_daemon,
    start_daemon,
    start_worker,
    stop,
    write_butler,
)
from tests.workers.machines import machine

pytestmark = pytest.mark.slow

#: Each session's runtime: a second's work, so that sessions overlap and a limit shows; it
#: answers when it started and ended (one clock: the machines share a kernel).
NAP = [
    sys.executable,
    "-c",
    "import time; start = time.time(); time.sleep(1); print(start, time.time())",
]
BURST = 9
LIMIT = 3


async def test_a_burst_spreads_over_two_workers_each_session_recorded_once_within_the_limit(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    try:
        with machine() as first, machine() as second:
            for place in (first, second):
                route_to_daemon(place)
            port = free_port()
            public = f"http://{first.peer}:{port}"
            folder = write_butler(roster, port, public, NAP, limit=LIMIT)
            daemon = start_daemon(folder, port, dsn)
            workers = []
            try:
                # Each worker could take 2 of the butler's 3: only both together fill it,
                # and only the job queue's limit keeps them from taking 4.
                workers = [
                    start_worker(place, roster, dsn, tmp_path / f"w{n}", capacity=2)
                    for n, place in enumerate((first, second))
                ]
                async with butler_client(f"{daemon.url}/mcp", timeout=300) as client:
                    calls = [
                        client.call_tool("trigger", {"prompt": f"burst {n}"}) for n in range(BURST)
                    ]
                    answers = [r.structured_content for r in await asyncio.gather(*calls)]
                assert all(a["success"] for a in answers), (answers, daemon.logs())
            finally:
                for worker in workers:
                    stop(worker)
                daemon.stop()

            rows = await fetch(
                dsn, "SELECT id, status, metadata->>'worker' AS worker, output FROM sessions"
            )
            assert len(rows) == BURST
            assert {r["status"] for r in rows} == {"succeeded"}
            assert {str(r["id"]) for r in rows} == {a["session_id"] for a in answers}
            ran_on = {r["worker"] for r in rows}
            assert len(ran_on) == 2, ran_on  # both workers took sessions

            # Once each: one job per session, picked once, ended once; nothing left over.
            jobs = await fetch(dsn, "SELECT id, payload FROM pgqueuer")
            log = await fetch(dsn, "SELECT job_id, status, created FROM pgqueuer_log")
            queued = [json.loads(bytes(j["payload"]))["session_id"] for j in jobs]
            assert queued == [] or sorted(queued) == sorted(str(r["id"]) for r in rows)
            picks = [entry for entry in log if entry["status"] == "picked"]
            ends = [entry for entry in log if entry["status"] == "successful"]
            assert len(picks) == len(ends) == BURST
            assert len({p["job_id"] for p in picks}) == BURST
            assert await fetch(dsn, "SELECT * FROM session_results") == []

            # The limit, as the runtimes' own answers in the rows say, and as the queue's
            # log says (from each job's pick to its end). (The rows' started_at and
            # completed_at are not it: a slot is free again before its row is written.)
            ran = [tuple(map(float, r["output"].split())) for r in rows]
            assert 2 <= most_at_once(ran) <= LIMIT  # type: ignore[arg-type]
            ended = {e["job_id"]: e["created"] for e in ends}
            assert most_at_once([(p["created"], ended[p["job_id"]]) for p in picks]) <= LIMIT
    finally:
        await server.stop()
