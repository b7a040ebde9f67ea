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


LOADED_CALLERS = 32
#: A runtime that works a while (the issue's ~2 s) once its gate opens.
SLEEPY = (
    "import sys, time; gate = open(sys.argv[1]).read().strip().splitlines()[-1]; "
    "open(gate).read(); time.sleep(2); print('done: ' + gate.rsplit('/', 1)[-1])"
)
#: How long after the last reply the callers follow up: a loaded machine's callers are
#: slow. Longer than the 1 s of silence the server once stopped after; a caller's
#: connection then waits, open and idle, as it would while its client is busy.
FOLLOW_UP_AFTER_S = 2.0


async def all_outcomes(port: int, prompts: list[str]) -> list[str]:
    """Every caller triggers; once all have their replies (or errors), each calls again."""
    answered = 0
    everyone = asyncio.Event()

    async def one(prompt: str) -> str:
        nonlocal answered
        try:
            async with butler_client(f"http://127.0.0.1:{port}/mcp", timeout=120) as client:
                try:
                    result = (await client.call_tool("trigger", {"prompt": prompt})).data
                finally:
                    answered += 1
                    if answered == len(prompts):
                        everyone.set()
                await everyone.wait()
                await asyncio.sleep(FOLLOW_UP_AFTER_S)
                await client.call_tool("state_get", {"key": "seen"})
        except Exception as exc:  # what the caller saw instead of its reply
            return f"{type(exc).__name__}: {exc}"
        output = result.get("output") if isinstance(result, dict) else getattr(result, "output", "")
        return str(output).strip()

    return await asyncio.gather(*(one(p) for p in prompts))


def test_thirty_two_loaded_callers_all_get_their_replies_through_a_sigterm_drain(
    roster, schemas, tmp_path
):
    port = free_port()
    gates = [tmp_path / f"gate{i}" for i in range(LOADED_CALLERS)]
    for gate in gates:
        os.mkfifo(gate)
    runtime = {
        "type": "command",
        "command": [sys.executable, "-c", SLEEPY, "{prompt_file}"],
        "max_concurrent_sessions": LOADED_CALLERS,
    }
    write_butler(roster, "alpha", port=port, schema=schemas[0], runtime=runtime)
    log = tmp_path / "up.log"
    with roster_up(roster, log, "--database-url", TEST_DSN, env=dict(os.environ)) as proc:
        wait_healthy(proc, [port], log)
        with ThreadPoolExecutor(1) as pool:
            replies = pool.submit(asyncio.run, all_outcomes(port, [str(g) for g in gates]))
            wait_until(
                lambda: asyncio.run(session_statuses(schemas[0])) == ["running"] * LOADED_CALLERS,
                timeout=120,
            )
            for gate in gates[: LOADED_CALLERS // 2]:
                release(gate)
            proc.send_signal(signal.SIGTERM)
            for gate in gates[LOADED_CALLERS // 2 :]:
                release(gate)
            seen = sorted(replies.result(timeout=180))
        assert proc.wait(timeout=60) == 0, log.read_text()
    assert [s for s in seen if not s.startswith("done: ")] == []
    assert seen == sorted(f"done: {gate.name}" for gate in gates)
    assert asyncio.run(session_statuses(schemas[0])) == ["succeeded"] * LOADED_CALLERS
