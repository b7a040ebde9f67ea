"""A caller whose session was running when the daemon was told to stop gets its whole reply.

A stock MCP client follows a tool's result with more requests (it re-lists the
tools to check the result's schema, then ends its MCP session); a daemon that
stops serving the moment its sessions are drained fails those, and the caller
sees ``ConnectError`` although its session succeeded.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import butler_client, free_port, wait_until, write_butler
from tests.rosters import release, roster_up, session_statuses, wait_healthy

pytestmark = pytest.mark.slow

CALLERS = 8
#: The runtime waits on the FIFO named in the last line of its prompt.
SCRIPT = (
    "import sys; gate = open(sys.argv[1]).read().strip().splitlines()[-1]; "
    "open(gate).read(); print('done: ' + gate.rsplit('/', 1)[-1])"
)
#: How long a caller looks at its result before its next request (a client's own work).
THINK_S = 0.3


async def trigger_then_follow_up(port: int, prompt: str) -> str:
    async with butler_client(f"http://127.0.0.1:{port}/mcp", timeout=120) as client:
        result = (await client.call_tool("trigger", {"prompt": prompt})).data
        await asyncio.sleep(THINK_S)
        await client.call_tool("state_get", {"key": "seen"})
    output = result.get("output") if isinstance(result, dict) else getattr(result, "output", "")
    return str(output).strip()


def outcome(port: int, prompt: str) -> str:
    try:
        return asyncio.run(trigger_then_follow_up(port, prompt))
    except Exception as exc:  # what the caller saw instead of its reply
        return f"{type(exc).__name__}: {exc}"


def test_every_caller_gets_its_reply_and_its_follow_ups_when_the_daemon_drains(
    roster, schemas, tmp_path
):
    port = free_port()
    gates = [tmp_path / f"gate{i}" for i in range(CALLERS)]
    for gate in gates:
        os.mkfifo(gate)
    runtime = {
        "type": "command",
        "command": [sys.executable, "-c", SCRIPT, "{prompt_file}"],
        "max_concurrent_sessions": CALLERS,
    }
    write_butler(roster, "alpha", port=port, schema=schemas[0], runtime=runtime)
    log = tmp_path / "up.log"
    with roster_up(roster, log, "--database-url", TEST_DSN, env=dict(os.environ)) as proc:
        wait_healthy(proc, [port], log)
        with ThreadPoolExecutor(CALLERS) as pool:
            replies = [pool.submit(outcome, port, str(gate)) for gate in gates]
            wait_until(
                lambda: asyncio.run(session_statuses(schemas[0])) == ["running"] * CALLERS,
                timeout=60,
            )
            proc.send_signal(signal.SIGTERM)
            for gate in gates:
                release(gate)
            seen = sorted(reply.result(timeout=120) for reply in replies)
        assert proc.wait(timeout=60) == 0, log.read_text()
    assert seen == sorted(f"done: {gate.name}" for gate in gates)
    assert asyncio.run(session_statuses(schemas[0])) == ["succeeded"] * CALLERS
