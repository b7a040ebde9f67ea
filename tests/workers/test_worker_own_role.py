"""A worker on a database role of its own (``butler worker --init-role``), on another
"machine": the role reaches only the job queue, and a session still runs end to end."""

from __future__ import annotations

import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.commands import butler
from tests.helpers import butler_client, free_port
from tests.workers.machines import machine
from tests.workers.tester import LinkDaemon, link_butler, link_worker, output_of, worker_log

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
