"""``[butler.runtime] workers = "any"``: a session runs in the daemon while a local slot is
free, the next on a live worker (on its "machine"), whose runtime calls the butler back at
its ``public_url``; with no live worker, sessions wait for the local slot instead."""

from __future__ import annotations

import asyncio

import pytest

from butler.store.embedded import EmbeddedPostgres
from tests.helpers import butler_client, eventually, free_port
from tests.workers.fleet import (
    fetch,
    held_runtime,
    route_to_daemon,
    start_daemon,
    start_worker,
    stop,
    write_butler,
)
from tests.workers.machines import machine

pytestmark = pytest.mark.slow

#: One local slot, two sessions at once; unjailed so the runtime sees its release file.
ANY = ("local_sessions = 1", "[butler.sandbox]", 'mode = "none"')


async def _rows(dsn: str) -> list:
    return await fetch(
        dsn,
        "SELECT prompt, status, metadata->>'worker' AS worker FROM sessions ORDER BY created_at",
    )


async def test_any_runs_here_while_a_local_slot_is_free_and_the_next_on_a_worker_at_public_url(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    release = tmp_path / "release"
    try:
        with machine() as place:
            route_to_daemon(place)
            port = free_port()
            public = f"http://{place.peer}:{port}"
            command = held_runtime(roster, release)
            folder = write_butler(roster, port, public, command, workers="any", limit=2, extra=ANY)
            daemon = start_daemon(folder, port, dsn)
            worker = None
            try:
                worker = start_worker(place, roster, dsn, tmp_path / "worker")
                await eventually(
                    lambda: fetch(dsn, "SELECT 1 FROM workers"), timeout=60, interval=0.3
                )
                async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                    here = asyncio.create_task(client.call_tool("trigger", {"prompt": "here"}))

                    async def running(n: int) -> bool:
                        rows = await _rows(dsn)
                        return sum(r["status"] == "running" for r in rows) == n

                    await eventually(lambda: running(1), timeout=60)
                    there = asyncio.create_task(client.call_tool("trigger", {"prompt": "there"}))

                    async def claimed() -> bool:
                        return any(r["worker"] for r in await _rows(dsn))

                    await eventually(claimed, timeout=60)
                    release.touch()
                    answers = [(await t).structured_content for t in (here, there)]
                assert all(a["success"] for a in answers), (answers, daemon.logs())
                local, remote = (a["output"].strip() for a in answers)
                assert local == f"http://127.0.0.1:{port}/mcp"  # the daemon's own address
                assert remote == f"{public}/mcp"  # the worker called back at public_url
                rows = {r["prompt"]: r for r in await _rows(dsn)}
                assert rows["here"]["worker"] is None
                assert rows["there"]["worker"].endswith(f":{worker.pid}")
                state = await fetch(dsn, "SELECT key FROM state ORDER BY key")
                assert [s["key"] for s in state] == ["here", "there"]
            finally:
                release.touch()
                stop(worker)
                daemon.stop()
    finally:
        await server.stop()


async def test_any_runs_a_queued_session_here_when_the_local_slot_frees_before_a_worker(
    own_postgres, tmp_path
):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    release = tmp_path / "release"
    try:
        with machine() as place:
            route_to_daemon(place)
            port = free_port()
            public = f"http://{place.peer}:{port}"
            command = held_runtime(roster, release)
            folder = write_butler(roster, port, public, command, workers="any", limit=4, extra=ANY)
            daemon = start_daemon(folder, port, dsn)
            worker = None
            try:
                worker = start_worker(place, roster, dsn, tmp_path / "worker", capacity=2)
                await eventually(
                    lambda: fetch(dsn, "SELECT 1 FROM workers"), timeout=60, interval=0.3
                )
                async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:

                    def trigger(prompt: str) -> asyncio.Task:
                        return asyncio.create_task(client.call_tool("trigger", {"prompt": prompt}))

                    async def running(n: int) -> bool:
                        rows = await _rows(dsn)
                        return sum(r["status"] == "running" for r in rows) == n

                    async def on_worker(n: int) -> bool:
                        return sum(bool(r["worker"]) for r in await _rows(dsn)) == n

                    calls = {"a": trigger("a")}  # the local slot
                    await eventually(lambda: running(1), timeout=60)
                    calls |= {"b": trigger("b"), "c": trigger("c")}  # the worker, now full
                    await eventually(lambda: on_worker(2), timeout=60)
                    calls["d"] = trigger("d")  # queued for the worker, waiting here too
                    await eventually(
                        lambda: fetch(dsn, "SELECT 1 FROM pgqueuer WHERE status = 'queued'"),
                        timeout=60,
                    )
                    (tmp_path / "release.d").touch()
                    (tmp_path / "release.a").touch()  # the local slot frees first
                    first = (await asyncio.wait_for(calls["a"], 60)).structured_content
                    took = (await asyncio.wait_for(calls["d"], 60)).structured_content
                    release.touch()
                    rest = [(await calls[p]).structured_content for p in "bc"]
                assert all(a["success"] for a in (first, took, *rest)), daemon.logs()
                assert took["output"].strip() == f"http://127.0.0.1:{port}/mcp"  # ran here
                assert [a["output"].strip() for a in rest] == [f"{public}/mcp"] * 2
                rows = {r["prompt"]: r for r in await _rows(dsn)}
                assert rows["d"]["worker"] is None
                log = await fetch(dsn, "SELECT status::text FROM pgqueuer_log ORDER BY id")
                assert [entry["status"] for entry in log].count("canceled") == 1
            finally:
                release.touch()
                stop(worker)
                daemon.stop()
    finally:
        await server.stop()


async def test_any_without_a_live_worker_runs_every_session_in_the_daemon(own_postgres, tmp_path):
    server = EmbeddedPostgres(own_postgres)
    dsn = await server.start()
    roster = tmp_path / "roster"
    release = tmp_path / "release"
    try:
        port = free_port()
        command = held_runtime(roster, release)
        folder = write_butler(
            roster, port, f"http://127.0.0.1:{port}", command, workers="any", extra=ANY
        )
        daemon = start_daemon(folder, port, dsn)
        try:
            async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                calls = [
                    asyncio.create_task(client.call_tool("trigger", {"prompt": p}))
                    for p in ("first", "second")
                ]

                async def one_waits() -> bool:
                    statuses = sorted(r["status"] for r in await _rows(dsn))
                    return statuses == ["pending", "running"]

                # Both hold a slot of the butler's 3; one holds the one local slot and the
                # other, finding no live worker, waits for it (and says so: pending)
                # rather than for a worker.
                await eventually(one_waits, timeout=60)
                release.touch()
                answers = [(await t).structured_content for t in calls]
            assert all(a["success"] for a in answers), (answers, daemon.logs())
            assert [r["worker"] for r in await _rows(dsn)] == [None, None]
            assert await fetch(dsn, "SELECT * FROM pgqueuer_log") == []  # nothing enqueued
        finally:
            release.touch()
            daemon.stop()
    finally:
        await server.stop()
