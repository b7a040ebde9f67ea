"""Per-session bounds: a session past max_processes or max_memory_mb ends, alone.

Real sessions in the real jail, their runtime a script that hogs what it is
told to (tests/sandbox/hog.py), beside a session that must go on unharmed.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import (
    DaemonProcess,
    butler_client,
    free_port,
    get_json,
    require_jail,
    write_butler,
)

pytestmark = pytest.mark.slow  # a daemon, and sessions in the jail

HOG = Path(__file__).with_name("hog.py")
BOUNDS = "\n[butler.sandbox]\nmax_processes = 64\nmax_memory_mb = 256\n"


@pytest.fixture
def daemon(tmp_path: Path, schema_name: str):
    require_jail()
    runtime = {
        "type": "command",
        "command": ["/usr/bin/python3", "-I", "{cwd}/hog.py", "{prompt_file}"],
        "max_concurrent_sessions": 2,
    }
    port = free_port()
    folder = write_butler(
        tmp_path / "roster", "hog", port=port, schema=schema_name, runtime=runtime, extra=BOUNDS
    )
    shutil.copy(HOG, folder / "hog.py")
    env = {"BUTLER_SANDBOX": "bwrap", "BUTLER_DATA_DIR": str(tmp_path / "data")}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as running:
        yield running


async def beside(daemon: DaemonProcess, hog: str) -> tuple[dict, dict, bool]:
    """Run the hog and a plain session at once; their results, and whether the daemon
    answered /health while they ran."""
    async with butler_client(f"{daemon.url}/mcp", timeout=180) as client:

        async def run(prompt: str) -> dict:
            answer = await client.call_tool("trigger", {"prompt": prompt, "timeout_s": 120})
            return answer.structured_content

        async def healthy() -> bool:
            await asyncio.sleep(1)
            status, _ = await asyncio.to_thread(get_json, f"{daemon.url}/health", 10)
            return status == 200

        hogged, plain, answered = await asyncio.gather(run(hog), run("alive"), healthy())
    return hogged, plain, answered


def leftovers(daemon: DaemonProcess) -> str:
    """Processes of the hog still running anywhere on the machine."""
    done = subprocess.run(["pgrep", "-af", "hog.py"], capture_output=True, text=True)
    return "\n".join(line for line in done.stdout.splitlines() if str(daemon.port) not in line)


async def test_a_session_starting_too_many_processes_ends_alone_saying_which_bound(daemon):
    hogged, plain, answered = await beside(daemon, "processes 200")
    assert hogged["success"] is False
    assert "[butler.sandbox] max_processes = 64" in hogged["error"], hogged["error"]
    assert "started 200 processes" not in hogged["output"]
    assert plain["success"] is True and plain["output"] == "alive"
    assert answered
    assert "hog.py processes" not in leftovers(daemon)


async def test_a_session_holding_too_much_memory_ends_alone_saying_which_bound(daemon):
    hogged, plain, answered = await beside(daemon, "memory 1024")
    assert hogged["success"] is False
    assert "[butler.sandbox] max_memory_mb = 256" in hogged["error"], hogged["error"]
    assert plain["success"] is True and plain["output"] == "alive"
    assert answered
