"""Which callers a drain still owes, and when the server may stop (butler/http_quiet.py)."""

from __future__ import annotations

import asyncio

from butler.http_quiet import IDLE_OWED_S, QUIET_S, Traffic

ALICE = ("127.0.0.1", 40001)
BOB = ("127.0.0.1", 40002)


def request(client, method: str = "POST", accept: bytes = b"application/json"):
    return {
        "type": "http",
        "method": method,
        "client": client,
        "headers": [(b"accept", accept)],
    }


class Held:
    """An app whose requests are answered when the test says so."""

    def __init__(self) -> None:
        self.gates: list[asyncio.Event] = []

    async def __call__(self, scope, receive, send) -> None:
        gate = asyncio.Event()
        self.gates.append(gate)
        await gate.wait()


async def test_a_caller_with_a_call_running_at_the_drain_is_owed_until_its_connection_closes():
    app = Held()
    traffic = Traffic(app)
    running = asyncio.create_task(traffic(request(ALICE), None, None))
    await asyncio.sleep(0)
    traffic.draining()
    app.gates[0].set()
    await running
    later = traffic.last_seen + QUIET_S + 0.1
    assert not traffic.done(later, open_peers={ALICE})  # may still follow up
    assert traffic.done(later, open_peers=set())  # it closed its connection: done


async def test_an_owed_caller_that_keeps_its_connection_is_done_once_silent_for_the_keep_alive():
    app = Held()
    traffic = Traffic(app)
    running = asyncio.create_task(traffic(request(ALICE), None, None))
    await asyncio.sleep(0)
    traffic.draining()
    app.gates[0].set()
    await running
    assert traffic.done(traffic.last_seen + IDLE_OWED_S, open_peers={ALICE})


async def test_idle_connections_at_the_drain_are_not_owed_but_a_request_in_flight_holds_the_stop():
    app = Held()
    traffic = Traffic(app)
    traffic.draining()  # nothing in flight: nobody owed
    running = asyncio.create_task(traffic(request(BOB), None, None))
    await asyncio.sleep(0)
    assert not traffic.done(traffic.last_seen + QUIET_S + 0.1, open_peers={BOB})
    app.gates[0].set()
    await running
    assert traffic.done(traffic.last_seen + QUIET_S, open_peers={BOB})
    assert not traffic.done(traffic.last_seen, open_peers={BOB})  # a follow-up may come at once


async def test_a_long_lived_event_stream_is_never_in_flight():
    app = Held()
    traffic = Traffic(app)
    stream = asyncio.create_task(traffic(request(ALICE, "GET", b"text/event-stream"), None, None))
    await asyncio.sleep(0)
    traffic.draining()
    assert traffic.in_flight == 0 and traffic.owed == {}
    stream.cancel()
