"""A worker on a database role of its own (``butler worker --init-role``), on another
"machine": the role reaches only the job queue, and a session still runs end to end,
jailed, with its attachments and the memory its daemon recalled."""

from __future__ import annotations

import asyncio
import json

import pytest

from butler.spawner.request import TriggerRequest
from butler.spawner.workspace import SessionFile
from butler.store.db import Database
from butler.store.embedded import EmbeddedPostgres
from tests.commands import butler
from tests.helpers import butler_client, free_port, require_jail
from tests.workers.fleet import served
from tests.workers.machines import machine
from tests.workers.tester import (
    JAILED,
    LinkDaemon,
    link_butler,
    link_worker,
    output_of,
    probe_butler,
    worker_log,
    worker_role,
)

pytestmark = pytest.mark.slow


async def test_a_worker_on_the_role_init_role_made_runs_a_session_end_to_end(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster, data = tmp_path / "roster", tmp_path / "worker-data"
    try:
        with machine() as place:
            port = free_port()
            folder = link_butler(roster, place.peer, port)
            # The daemon's start migrates: the group role is made and granted the queue.
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            try:
                made = butler(
                    "worker", "-r", str(roster), "--only", "tester",
                    "--init-role", "worker_one", "--database-url", dsn,
                )  # fmt: skip
                assert made.returncode == 0, made.stderr
                assert "tester (workers_test)" in made.stdout, made.stdout
                url = made.stdout.strip().splitlines()[-1].strip()
                assert url.startswith("postgresql://worker_one:"), made.stdout
                worker = link_worker(place, roster, url, data)
                async with butler_client(f"{daemon.url}/mcp", timeout=180) as client:
                    result = await client.call_tool("trigger", {"prompt": "greeting"})
                    answer = result.structured_content
                    assert answer["success"], (answer, worker_log(data), daemon.logs())
                    assert answer["output"].strip() == "worker says hi"
                    state = await client.call_tool("state_get", {"key": "greeting"})
                    assert "from-worker" in state.content[0].text
            finally:
                if worker is not None:
                    worker.terminate()
                    (tmp_path / "worker.log").write_text(output_of(worker, data))
                daemon.stop()
        log = (tmp_path / "worker.log").read_text()
        assert "more than a worker needs" not in log
        assert "reaches only the job queue" in log
        assert "permission denied" not in log, log
        # Run again, it grants again and keeps the password: no new URL.
        again = butler(
            "worker", "-r", str(roster), "--init-role", "worker_one", "--database-url", dsn
        )
        assert again.returncode == 0, again.stderr
        assert "exists already" in again.stdout and "postgresql://" not in again.stdout
    finally:
        await server.stop()


async def test_a_jailed_worker_on_its_own_role_gets_its_sessions_attachments_and_memory(
    own_postgres, tmp_path
):
    require_jail()
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    data = tmp_path / "data"
    try:
        with machine() as place:
            memory = "[butler.memory]\nenabled = true\n"
            folder = probe_butler(tmp_path / "roster", place.peer, free_port(), memory)
            async with (
                served(folder, dsn, place.peer) as daemon,
                worker_role(Database(dsn, "workers_test")) as url,
            ):
                worker = link_worker(place, folder.parent, url, data, JAILED)
                try:
                    note = SessionFile("meds.txt", b"Iron 65 mg at 8:00.\n", "text/plain")
                    first = await daemon.spawner.trigger(
                        TriggerRequest(prompt=json.dumps({"asked": "marker-7c2"}), files=(note,))
                    )
                    second = await daemon.spawner.trigger(
                        TriggerRequest(prompt=json.dumps({"system": True}))
                    )
                finally:
                    worker.terminate()
                    await asyncio.to_thread(worker.wait, 60)
        log = worker_log(data)
        assert first.success, (first.error, log)
        files = json.loads(first.output.splitlines()[-1])["files"]
        assert files == {"meds.txt": "read: Iron 65 mg at 8:00.\n"}
        # Recalled by the daemon, which holds the rows, and carried in the job.
        assert second.success, (second.error, log)
        system = json.loads(second.output.splitlines()[-1])["system"]
        assert "Past session records" in system and "marker-7c2" in system
        assert "reaches only the job queue" in log and "permission denied" not in log
    finally:
        await server.stop()
