"""A session on a worker runs in the same jail as a local one: bubblewrap, the seccomp
filter and the egress proxy, which lets it reach its butler's MCP address and its
model API and nothing else, and shows it none of the worker machine's files."""

from __future__ import annotations

import json

import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import butler_client, free_port, require_jail
from tests.workers.far_host import far_host, status_from
from tests.workers.machines import machine
from tests.workers.tester import JAILED, LinkDaemon, link_worker, output_of, probe_butler

pytestmark = pytest.mark.slow


async def test_a_jailed_session_on_a_worker_reaches_its_butler_but_no_other_host_nor_file(
    own_postgres, tmp_path
):
    require_jail()
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    secret = tmp_path / "worker-secret.txt"  # on the worker's disk, outside the jail
    secret.write_text("the worker's own secret\n", encoding="utf-8")
    try:
        with machine() as place, far_host(place, tmp_path) as other:
            # The worker's machine reaches the far host: what keeps the session from it
            # is the jail, not the network.
            assert status_from(place, other) == "200"
            port = free_port()
            folder = probe_butler(roster, place.peer, port)
            daemon = LinkDaemon(folder, port=port, database_url=dsn, host=place.peer).start()
            worker = None
            try:
                worker = link_worker(place, roster, dsn, tmp_path / "worker-data", JAILED)
                plan = {
                    "mcp": {"tool": "state_set", "arguments": {"key": "k", "value": "jailed"}},
                    "fetch": [other],
                    "read": [str(secret)],
                }
                async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                    result = await client.call_tool("trigger", {"prompt": json.dumps(plan)})
                    answer = result.structured_content
                    assert answer["success"], (answer, daemon.logs())
                    report = json.loads(answer["output"].splitlines()[-1])
                    state = await client.call_tool("state_get", {"key": "k"})
                    row = await client.call_tool(
                        "session_get", {"session_id": answer["session_id"]}
                    )
                # Its butler's tools, across the link, through the jail's proxy.
                assert "jailed" in str(state.content), report["mcp"]
                # Another host: refused by the proxy, which names the setting that opens it.
                refused = report["fetch"][other]
                assert refused.startswith("403") and "allow_hosts" in refused, refused
                # The worker machine's own files are not in the jail.
                assert report["read"][str(secret)] == "FileNotFoundError"
                # And the row says what the jail refused, as a local session's does.
                sandbox = row.structured_content["metadata"]["sandbox"]
                assert sandbox["mode"] == "bwrap"
                assert sandbox["blocked"] == 1
                assert other.split("//")[1].split(":")[0] in json.dumps(sandbox["blocked_hosts"])
            finally:
                if worker is not None:
                    worker.terminate()
                    output = output_of(worker, tmp_path / "worker-data")
                    (tmp_path / "worker.log").write_text(output)
                daemon.stop()
    finally:
        await server.stop()
