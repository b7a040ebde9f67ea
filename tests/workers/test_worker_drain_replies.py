"""A daemon whose sessions run on a worker, told to stop (SIGTERM) while callers wait for
them: every caller gets its reply and its follow-ups, none a ``ReadError`` or
``ConnectError`` (issue 35: with workers, 2 of 4 callers once got ``ConnectError``).

The worker is on a "machine" of its own (tests/workers/machines.py); the callers are
on the daemon's. Half the sessions end before the signal, half during the drain, each
working a second once its gate opens, so replies go out while the daemon drains; a
caller that comes after the signal is refused, saying why.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import butler_client, eventually, free_port
from tests.rosters import release
from tests.workers.fleet import (
    fetch,
    route_to_daemon,
    start_daemon,
    start_worker,
    stop,
    write_butler,
)
from tests.workers.machines import machine

pytestmark = pytest.mark.slow

CALLERS = 32
#: Each session's runtime, on the worker: waits for its gate (a FIFO named by the prompt)
#: to open, works a second, answers. A shell, not Python: 32 of them at once are cheap.
GATED = ["bash", "-c", 'cat "$0" >/dev/null; sleep 1; echo "done: ${0##*/}"', "{prompt}"]
#: How long after the last reply the callers follow up (a loaded machine's callers are
#: slow; longer than the 1 s of silence the daemon once stopped after).
FOLLOW_UP_AFTER_S = 2.0


async def every_outcome(url: str, prompts: list[str]) -> list[str]:
    """Every caller triggers; once all have their replies (or errors), each calls again,
    as a stock MCP client does after a result. What each saw, reply or error."""
    answered = 0
    everyone = asyncio.Event()

    async def one(prompt: str) -> str:
        nonlocal answered
        try:
            async with butler_client(f"{url}/mcp", timeout=180) as client:
                try:
                    reply = (await client.call_tool("trigger", {"prompt": prompt})).data
                finally:
                    answered += 1
                    if answered == len(prompts):
                        everyone.set()
                await everyone.wait()
                await asyncio.sleep(FOLLOW_UP_AFTER_S)
                await client.call_tool("state_get", {"key": "seen"})
        except Exception as exc:  # what the caller saw instead of its reply
            return f"{type(exc).__name__}: {exc}"
        output = reply.get("output") if isinstance(reply, dict) else getattr(reply, "output", "")
        return str(output).strip()

    return await asyncio.gather(*(one(p) for p in prompts))


async def _running_on_the_worker(dsn: str, count: int) -> bool:
    rows = await fetch(
        dsn,
        "SELECT count(*) AS n FROM sessions"
        " WHERE status = 'running' AND metadata->>'worker' IS NOT NULL",
    )
    return rows[0]["n"] == count


async def _late_trigger(url: str) -> dict:
    """A trigger sent once the daemon drains: what its caller was answered."""
    async with butler_client(f"{url}/mcp", timeout=60) as client:
        return (await client.call_tool("trigger", {"prompt": "late"})).structured_content


async def _release(gates: list[Path]) -> None:
    await asyncio.gather(*(asyncio.to_thread(release, gate) for gate in gates))


async def test_every_caller_of_worker_sessions_gets_its_reply_through_a_sigterm_drain(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    gates = [tmp_path / f"gate{i}" for i in range(CALLERS)]
    for gate in gates:
        os.mkfifo(gate)
    try:
        with machine() as place:
            route_to_daemon(place)
            port = free_port()
            folder = write_butler(roster, port, f"http://{place.peer}:{port}", GATED, limit=CALLERS)
            daemon = start_daemon(folder, port, dsn)
            worker = start_worker(place, roster, dsn, tmp_path / "worker", capacity=CALLERS)
            try:
                calling = asyncio.create_task(every_outcome(daemon.url, [str(g) for g in gates]))
                await eventually(
                    lambda: calling.done() or _running_on_the_worker(dsn, CALLERS),
                    timeout=120,
                    interval=0.2,
                )
                assert not calling.done(), (calling.result(), daemon.logs())
                await _release(gates[: CALLERS // 2])
                assert daemon.proc is not None
                daemon.proc.send_signal(signal.SIGTERM)
                await eventually(lambda: "shutting down" in daemon.logs(), timeout=30)
                refused = await _late_trigger(daemon.url)
                await _release(gates[CALLERS // 2 :])
                seen = sorted(await asyncio.wait_for(calling, timeout=240))
                exit_code = await asyncio.to_thread(daemon.proc.wait, 60)
            finally:
                stop(worker)
                daemon.stop()
            assert [s for s in seen if not s.startswith("done: ")] == [], daemon.logs()
            assert seen == sorted(f"done: {gate.name}" for gate in gates)
            assert exit_code == 0, daemon.logs()
            # A caller that came after the signal is told why, not cut off.
            assert refused["success"] is False, refused
            assert "shutting down" in refused["error"], refused
            rows = await fetch(dsn, "SELECT status FROM sessions")
            assert [r["status"] for r in rows] == ["succeeded"] * CALLERS
    finally:
        await server.stop()
