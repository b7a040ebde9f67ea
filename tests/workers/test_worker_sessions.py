"""What the local path gives a session, a worker gives it too: its attachments in its
workspace and the butler's memory in its system prompt. What a worker cannot do (write
folders of the daemon's machine: a headless builder's worktree) is refused in one line.

The daemon runs in this test's event loop (assembled and served as ``butler run``
does), because attachments reach the spawner only from a channel's inbox, not from
any MCP tool; the worker is ``butler worker`` on its own "machine", jailed.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from butler.spawner.request import TriggerRequest
from butler.spawner.workspace import SessionFile
from butler.store.embedded import EmbeddedPostgres
from tests.helpers import free_port, require_jail
from tests.workers.fleet import served
from tests.workers.machines import machine
from tests.workers.tester import link_worker, probe_butler

pytestmark = pytest.mark.slow

MEMORY = "[butler.memory]\nenabled = true\n"


async def test_a_session_on_a_worker_gets_its_attachments_and_memory_and_a_builder_is_refused(
    own_postgres, tmp_path
):
    require_jail()
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    try:
        with machine() as place:
            folder = probe_butler(tmp_path / "roster", place.peer, free_port(), MEMORY)
            async with served(folder, dsn, place.peer) as butler:
                worker = link_worker(
                    place, folder.parent, dsn, tmp_path / "data", {"BUTLER_SANDBOX": "bwrap"}
                )
                try:
                    note = SessionFile("meds.txt", b"Iron 65 mg at 8:00.\n", "text/plain")
                    first = await butler.spawner.trigger(
                        TriggerRequest(prompt=json.dumps({"asked": "marker-5e1"}), files=(note,))
                    )
                    second = await butler.spawner.trigger(
                        TriggerRequest(prompt=json.dumps({"system": True}))
                    )
                    builder = await butler.spawner.trigger(
                        TriggerRequest(prompt="{}", writable=(tmp_path / "worktree",))
                    )
                finally:
                    worker.terminate()
                    await asyncio.to_thread(worker.wait, 60)  # its output: data/worker.log
        assert first.success, first.error
        # The attachment, placed in the session's workspace on the worker (inside the jail).
        files = json.loads(first.output.splitlines()[-1])["files"]
        assert files == {"meds.txt": "read: Iron 65 mg at 8:00.\n"}
        # The first session, remembered by the daemon, recalled into the next one's prompt.
        assert second.success, second.error
        system = json.loads(second.output.splitlines()[-1])["system"]
        assert "Past session records" in system and "marker-5e1" in system
        # A folder of the daemon's machine: refused in one line that says why and what to do.
        assert not builder.success
        assert builder.error is not None and "\n" not in builder.error
        assert "writes folders of the daemon's machine" in builder.error
        assert "which a worker cannot reach" in builder.error
    finally:
        await server.stop()
