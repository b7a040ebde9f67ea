"""Listings at 1,000,000 session rows against the same listings at 1,000.

One daemon; each listing is timed on its empty schema, then the table is
filled with one ``INSERT ... SELECT generate_series`` (and analysed) and
each is timed again. Times are request round trips on loopback, so they
bound the server's time from above.

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
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, drop_schema, elapsed_ms, median

from tests.helpers import TEST_TOKEN, DaemonProcess, butler_client, free_port, write_butler

Row = tuple[str, float, float, str]
SMALL = 1_000

#: One session a second back in time; every tenth failed, every fourth on codex, every
#: hundredth "urgent", so the charts, filters and searches have something to draw and find.
FILL = (
    "INSERT INTO {table} (id, prompt, output, trigger_source, runtime, status, created_at,"
    " duration_ms, input_tokens, output_tokens, cost_usd)"
    " SELECT gen_random_uuid(), 'p' || g || ' summarise the inbox',"
    " 'done ' || g || CASE WHEN g % 100 = 0 THEN ' urgent' ELSE '' END, 'external',"
    " CASE WHEN g % 4 = 0 THEN 'codex' ELSE 'claude-code' END,"
    " CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'succeeded' END,"
    " now() - (g || ' seconds')::interval, g % 60000, g % 5000, g % 700, (g % 100) / 1000.0"
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


async def listings(url: str, client: Any, requests: int) -> dict[str, float]:
    """Median ms of each listing a person or an agent reads."""
    api = f"{url}/api/sessions"
    cursor = (await asyncio.to_thread(http_get, api) or {})["cursor"]
    since = f"{api}?since={urllib.parse.quote(str(cursor))}"
    page = await client.call_tool("session_list", {"limit": 20})
    before = page.structured_content["result"][-1]["position"] if page.structured_content else ""
    calls: dict[str, Callable[[], Awaitable[object]]] = {
        "dashboard /": lambda: asyncio.to_thread(http_get, url + "/"),
        "/api/sessions": lambda: asyncio.to_thread(http_get, api),
        "/api/sessions?since= (live update)": lambda: asyncio.to_thread(http_get, since),
        "session_list": lambda: client.call_tool("session_list", {"limit": 20}),
        "session_list before= (next page)": lambda: client.call_tool(
            "session_list", {"limit": 20, "before": before}
        ),
        "builder_list": lambda: client.call_tool("builder_list", {}),
        **dashboard_pages(url),
    }
    return {name: await timed(call, requests) for name, call in calls.items()}


def dashboard_pages(url: str) -> dict[str, Callable[[], Awaitable[object]]]:
    """The dashboard's other pages: a search, filters, a deep page, charts, schedules."""
    pages = [
        "/?q=inbox", "/?q=urgent", "/?q=p12345",
        "/?status=failed", "/?runtime=codex&from=2000-01-01",
        "/?before=2000-01-01T00:00:00%2B00:00,00000000-0000-0000-0000-000000000000",
        "/charts?days=7", "/charts?days=90", "/schedules", "/state", "/roster",
    ]  # fmt: skip
    return {f"dashboard {p}": _getter(url + p) for p in pages}


def _getter(address: str) -> Callable[[], Awaitable[object]]:
    return lambda: asyncio.to_thread(http_get, address)


async def measure(dsn: str, rows: int, requests: int, tmp: Path) -> list[Row]:
    port = free_port()
    schema = f"bench_list_{port}"
    folder = write_butler(tmp / "roster", "listings", port=port, schema=schema)
    env = {"BUTLER_DATA_DIR": str(tmp / "data"), "ANTHROPIC_API_KEY": "sk-bench"}
    try:
        with DaemonProcess(folder, port=port, database_url=dsn, env=env) as daemon:
            async with butler_client(f"{daemon.url}/mcp", timeout=120) as client:
                await client.call_tool("status", {})
                # The small table fills every page, so only the table's size differs.
                await _fill(dsn, schema, SMALL)
                small = await listings(daemon.url, client, requests)
                await _fill(dsn, schema, rows - SMALL)
                # The first chart after the fill recomputes every day's figures, once.
                started = time.perf_counter()
                await asyncio.to_thread(http_get, f"{daemon.url}/charts?days=90")
                first_chart = elapsed_ms(started)
                full = await listings(daemon.url, client, requests)
    finally:
        await drop_schema(dsn, schema)
    label = f"{rows:,} rows"
    found = [(f"{name} at {label}", full[name], small[name], f"{SMALL:,} rows") for name in full]
    rollup = f"first /charts after adding {rows - SMALL:,} rows (per-day figures recomputed)"
    return [*found, (rollup, first_chart, small["dashboard /charts?days=90"], "a warm chart")]


async def _fill(dsn: str, schema: str, rows: int) -> None:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(FILL.format(table=f'"{schema}".sessions'), rows)
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
    for label, ours, ref, name in found:
        print(f"{label:<52} {ours:8.1f} ms   {name}: {ref:8.1f} ms   {ours / ref:5.2f}x")


if __name__ == "__main__":
    main()
