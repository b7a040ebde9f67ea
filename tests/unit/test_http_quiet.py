"""When a drained server may stop: its callers done with their connections (http_quiet)."""

from __future__ import annotations

import asyncio
import time

from butler.http_quiet import IDLE_S, KEEP_PEERS, QUIET_S, Traffic

ALICE = ("127.0.0.1", 40001)
BOB = ("127.0.0.1", 40002)


def request(client, path: str = "/mcp", method: str = "POST", accept: bytes = b"*/*"):
    return {
        "type": "http",
        "method": method,
        "path": path,
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


async def answered(traffic: Traffic, app: Held, scope) -> None:
    running = asyncio.create_task(traffic(scope, None, None))
    await asyncio.sleep(0)
    app.gates[-1].set()
    await running


async def test_a_caller_whose_mcp_connection_is_open_and_recent_holds_the_stop_until_it_closes():
    app = Held()
    traffic = Traffic(app)
    await answered(traffic, app, request(ALICE))
    later = traffic.last_seen + QUIET_S
    assert not traffic.done(later, open_peers={ALICE})  # may still follow up
    assert traffic.done(later, open_peers=set())  # it closed its connection: done


async def test_a_caller_answered_before_the_drain_began_does_not_hold_the_stop():
    app = Held()
    traffic = Traffic(app)
    await answered(traffic, app, request(ALICE))  # e.g. an idle SSE client's last call
    began = time.monotonic()
    assert traffic.done(began + QUIET_S, open_peers={ALICE}, since=began)
    await answered(traffic, app, request(BOB))  # a call running when the drain began
    assert not traffic.done(traffic.last_seen + QUIET_S, open_peers={ALICE, BOB}, since=began)


async def test_a_caller_keeping_its_connection_is_done_once_silent_for_the_keep_alive():
    app = Held()
    traffic = Traffic(app)
    await answered(traffic, app, request(ALICE))
    assert traffic.done(traffic.last_seen + IDLE_S, open_peers={ALICE})


async def test_a_request_in_flight_holds_the_stop_and_a_follow_up_may_come_at_once():
    app = Held()
    traffic = Traffic(app)
    running = asyncio.create_task(traffic(request(BOB, "/health", "GET"), None, None))
    await asyncio.sleep(0)
    assert not traffic.done(traffic.last_seen + IDLE_S, open_peers=set())
    app.gates[0].set()
    await running
    assert not traffic.done(traffic.last_seen, open_peers=set())
    assert traffic.done(traffic.last_seen + QUIET_S, open_peers={BOB})  # not an MCP caller


async def test_a_long_lived_event_stream_is_never_in_flight():
    app = Held()
    traffic = Traffic(app)
    stream = asyncio.create_task(
        traffic(request(ALICE, "/mcp", "GET", b"text/event-stream"), None, None)
    )
    await asyncio.sleep(0)
    assert traffic.in_flight == 0 and traffic.peers == {}
    stream.cancel()


async def test_connections_long_silent_are_forgotten_so_the_notes_stay_bounded():
    app = Held()
    traffic = Traffic(app)
    traffic.peers = {("127.0.0.1", port): 0.0 for port in range(KEEP_PEERS)}
    await answered(traffic, app, request(ALICE))
    assert traffic.peers.keys() == {ALICE}
