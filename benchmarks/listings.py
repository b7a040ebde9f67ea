"""Listings at 1,000,000 session rows against the same listings at 10,000.

One daemon; the table is filled to 10,000 rows with one ``INSERT ... SELECT
generate_series`` (and analysed), each listing is timed, then the table is
filled to the full size and each is timed again. Every listing of sessions is
seeded so that its query returns a full page at both sizes (a page deep in
the past has rows older than it; the live view's ``since=`` poll finds rows
changed after its cursor); the run stops if one does not. Times are request
round trips on loopback, so they bound the server's time from above.

    .venv/bin/python benchmarks/listings.py [--rows 1000000] [--requests 20] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, drop_schema, elapsed_ms, median
from rows import Row, at_most, table

from tests.helpers import TEST_TOKEN, DaemonProcess, butler_client, free_port, write_butler

#: The reference table: large enough that every listing fills its page (1 % of it is 100).
SMALL = 10_000
#: Rows per page: the dashboard's default, and what the benchmark asks session_list for.
PAGE = 100
TOOL_PAGE = 20
#: Rows changed after the live view's cursor: what its ``since=`` poll returns.
CHANGED = 20
#: Rows older than the deep page's ``before=``, so that page is full.
OLDER = 150

#: One session a second back in time; every tenth failed, every fourth on codex, every
#: hundredth "urgent", and (first fill only, $2 = 10) every tenth "needle": the same
#: 1,000 rows hold it at both sizes, a rare word at a million. ``updated_at`` is the
#: creation time, so that only rows touched later are "changed" for the live view.
FILL = (
    "INSERT INTO {table} (id, prompt, output, trigger_source, runtime, status, created_at,"
    " updated_at, duration_ms, input_tokens, output_tokens, cost_usd)"
    " SELECT gen_random_uuid(), 'p' || g || ' summarise the inbox',"
    " 'done ' || g || CASE WHEN g % 100 = 0 THEN ' urgent' ELSE '' END"
    " || CASE WHEN $2 > 0 AND g % $2 = 0 THEN ' needle' ELSE '' END, 'external',"
    " CASE WHEN g % 4 = 0 THEN 'codex' ELSE 'claude-code' END,"
    " CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'succeeded' END,"
    " now() - (g || ' seconds')::interval, now() - (g || ' seconds')::interval,"
    " g % 60000, g % 5000, g % 700, (g % 100) / 1000.0"
    " FROM generate_series(1, $1) g"
)


def http_get(url: str) -> dict[str, object] | None:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TEST_TOKEN}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        body = response.read()
    return json.loads(body) if response.headers.get_content_type() == "application/json" else None


async def timed(call: Callable[[], Awaitable[object]], requests: int) -> float:
    await call()  # warm the plan and the pages
    times = []
    for _ in range(requests):
        started = time.perf_counter()
        await call()
        times.append(elapsed_ms(started))
    return median(times)


@dataclass
class Listing:
    """One listing: how to call it, how many rows it returns, and what it should return."""

    call: Callable[[], Awaitable[object]]
    #: How many rows the call returns (None: a page that lists no sessions).
    count: Callable[[], Awaitable[int]] | None
    full: int = PAGE


def short_pages(found: dict[str, int], expected: dict[str, int]) -> dict[str, str]:
    """The listings that returned fewer rows than their full page (their figure would lie)."""
    return {
        name: f"{found[name]} rows, a full page is {expected[name]}"
        for name in expected
        if found[name] < expected[name]
    }


async def listings(url: str, client: Any, dsn: str, schema: str) -> dict[str, Listing]:
    """Each listing a person or an agent reads, seeded so that its page is full."""
    api = f"{url}/api/sessions"
    conn = await asyncpg.connect(dsn)
    try:
        table = f'"{schema}".sessions'
        deep = await conn.fetchrow(
            f"SELECT created_at, id FROM {table} ORDER BY created_at, id OFFSET {OLDER} LIMIT 1"
        )
        cursor = (await asyncio.to_thread(http_get, api) or {})["cursor"]
        # The live view's poll returns what changed since its cursor: touch a page of rows.
        await conn.execute(
            f"UPDATE {table} SET output = output WHERE id IN"
            f" (SELECT id FROM {table} ORDER BY random() LIMIT {CHANGED})"
        )
    finally:
        await conn.close()
    since = f"{api}?since={urllib.parse.quote(str(cursor))}"
    before = urllib.parse.quote(f"{deep['created_at'].isoformat()},{deep['id']}")
    page = await client.call_tool("session_list", {"limit": TOOL_PAGE})
    next_page = page.structured_content["result"][-1]["position"]
    tool_deep = f"{deep['created_at'].isoformat()},{deep['id']}"

    def tool(args: dict[str, object]) -> Listing:
        async def call() -> object:
            return await client.call_tool("session_list", {"limit": TOOL_PAGE, **args})

        async def count() -> int:
            return len(
                (
                    await client.call_tool("session_list", {"limit": TOOL_PAGE, **args})
                ).structured_content["result"]
            )

        return Listing(call, count, TOOL_PAGE)

    async def changed() -> int:
        return len((await asyncio.to_thread(http_get, since) or {})["rows"])

    pages = {
        "dashboard /": "",
        "/api/sessions": "",
        "dashboard /?q=inbox (every row)": "q=inbox",
        "dashboard /?q=urgent (1 % of rows)": "q=urgent",
        "dashboard /?q=needle (1,000 rows)": "q=needle",
        "dashboard /?status=failed": "status=failed",
        "dashboard /?runtime=codex&from=2000-01-01": "runtime=codex&from=2000-01-01",
        f"dashboard /?before= ({OLDER} rows older)": f"before={before}",
    }
    found: dict[str, Listing] = {}
    for name, query in pages.items():
        path = "/api/sessions" if name == "/api/sessions" else "/"
        address = f"{url}{path}" + (f"?{query}" if query else "")
        found[name] = Listing(_getter(address), _counter(f"{api}?{query}"))
    found[f"/api/sessions?since= (live update, {CHANGED} rows changed)"] = Listing(
        _getter(since), changed, CHANGED
    )
    found["session_list"] = tool({})
    found["session_list before= (next page)"] = tool({"before": next_page})
    found[f"session_list before= ({OLDER} rows older)"] = tool({"before": tool_deep})
    found["builder_list (no builders among the rows)"] = Listing(
        lambda: client.call_tool("builder_list", {}), None
    )
    for page_path in ("/charts?days=7", "/charts?days=90", "/schedules", "/state", "/roster"):
        found[f"dashboard {page_path}"] = Listing(_getter(url + page_path), None)
    return found


def _counter(address: str) -> Callable[[], Awaitable[int]]:
    async def count() -> int:
        return int((await asyncio.to_thread(http_get, address) or {})["count"])

    return count


def _getter(address: str) -> Callable[[], Awaitable[object]]:
    return lambda: asyncio.to_thread(http_get, address)


async def measure_size(
    url: str, client: Any, dsn: str, schema: str, requests: int
) -> tuple[dict[str, float], dict[str, str], set[str]]:
    """Median ms of each listing at the table's present size, the short pages, the checked."""
    calls = await listings(url, client, dsn, schema)
    counted = {n: await c.count() for n, c in calls.items() if c.count is not None}
    short = short_pages(counted, {n: c.full for n, c in calls.items() if c.count is not None})
    return {name: await timed(c.call, requests) for name, c in calls.items()}, short, {*counted}


async def measure(
    dsn: str, rows: int, requests: int, tmp: Path, small: int = SMALL, *, strict: bool = True
) -> list[Row]:
    """Every listing at ``rows`` rows against the same at ``small``, each page full.

    ``strict``: stop when a page is short (its figure would time less than a page).
    """
    port = free_port()
    schema = f"bench_list_{port}"
    folder = write_butler(tmp / "roster", "listings", port=port, schema=schema)
    env = {"BUTLER_DATA_DIR": str(tmp / "data"), "ANTHROPIC_API_KEY": "sk-bench"}
    try:
        with DaemonProcess(folder, port=port, database_url=dsn, env=env) as daemon:
            async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                await client.call_tool("status", {})
                await _fill(dsn, schema, small, needle_every=10)
                few, short_few, checked = await measure_size(
                    daemon.url, client, dsn, schema, requests
                )
                await _fill(dsn, schema, rows - small, needle_every=0)
                # The first chart after the fill recomputes every day's figures, once.
                started = time.perf_counter()
                await asyncio.to_thread(http_get, f"{daemon.url}/charts?days=90")
                first_chart = elapsed_ms(started)
                many, short_many, _ = await measure_size(daemon.url, client, dsn, schema, requests)
    finally:
        await drop_schema(dsn, schema)
    for size, short in ((small, short_few), (rows, short_many)):
        for name, why in short.items():
            print(f"listings at {size:,} rows: a short page: {name}: {why}", file=sys.stderr)
    if strict and (short_few or short_many):
        raise ShortPage("a listing returned less than a full page: its figure would say more")
    label, ref_name = f"{rows:,} rows", f"{small:,} rows"
    timed_ms = f"median request round trip of {requests} (loopback: an upper bound)"
    notes = {
        name: f"{timed_ms}; its page was checked full at both sizes"
        if name in checked and name not in {**short_few, **short_many}
        else f"{timed_ms}; its page was SHORT (see the run's errors)"
        if name in checked
        else f"{timed_ms}; lists no sessions, shows the table's size does not slow it"
        for name in many
    }
    for days in (7, 90):
        notes[f"dashboard /charts?days={days}"] = (
            f"{timed_ms}; per-day figures of sessions spanning {-(-rows // 86_400)} days"
        )
    found = [
        Row(
            f"{name} at {label}",
            many[name],
            few[name],
            ref_name,
            goal=at_most(50, "ms"),
            measures=notes[name],
        )
        for name in many
    ]
    rollup = f"first /charts after adding {rows - small:,} rows (per-day figures recomputed)"
    return [
        *found,
        Row(
            rollup,
            first_chart,
            few["dashboard /charts?days=90"],
            "a warm chart",
            measures="one request, right after the fill: every day's figures computed once",
        ),
    ]


class ShortPage(SystemExit):
    """A listing's query returned less than a page: the seeding is wrong, not the figure."""


async def _fill(dsn: str, schema: str, rows: int, needle_every: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(FILL.format(table=f'"{schema}".sessions'), rows, needle_every)
        await conn.execute(f'ANALYZE "{schema}".sessions')
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = asyncio.run(measure(args.database_url, args.rows, args.requests, Path(tmp)))
    print(table(found, verdicts=True))


if __name__ == "__main__":
    main()
