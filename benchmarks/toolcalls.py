"""Tool calls: one MCP call through a butler vs the same call against bare FastMCP.

Both servers run as processes over the same database with the same tools; the
same FastMCP ``Client`` calls ``state_get``, ``status`` and ``session_list``
on each, both transports, alternating rounds so load hits both alike. Also the
first call after ``/health`` answers: a new client session and one ``status``
call on a fresh daemon, for several fresh daemons (one first call each), against
the same new session and call made later on each of those daemons.

    .venv/bin/python benchmarks/toolcalls.py [--calls 60] [--starts 5] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, BareFastMCP, drop_schema, elapsed_ms, median
from rows import Row, ratio_at_most, table

from tests.helpers import DaemonProcess, butler_client, free_port, write_butler

TOOLS = {"state_get": {"key": "bench"}, "status": {}, "session_list": {"limit": 20}}


async def time_calls(
    url: str, tool: str, args: dict[str, object], calls: int, token: str | None = None
) -> list[float]:
    """``calls`` timed calls of ``tool`` after three untimed, as the owner or with ``token``."""
    async with butler_client(url, timeout=30, **({"auth": token} if token else {})) as client:
        for _ in range(3):
            await client.call_tool(tool, args)
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool(tool, args)
            times.append(elapsed_ms(started))
    return times


async def fresh_call(url: str) -> float:
    """A new client session and one ``status`` call, as an agent's first tool use."""
    started = time.perf_counter()
    async with butler_client(url, timeout=30) as client:
        await client.call_tool("status", {})
    return elapsed_ms(started)


async def warm_rows(butler_url: str, bare: BareFastMCP, calls: int) -> list[Row]:
    rows = []
    for transport, path in (("http", "/mcp"), ("sse", "/sse")):
        for tool, args in TOOLS.items():
            ours: list[float] = []
            ref: list[float] = []
            for _ in range(3):  # alternate, so a burst of load hits both alike
                ours += await time_calls(butler_url + path, tool, args, calls // 3)
                ref += await time_calls(bare.url(transport), tool, args, calls // 3)
            rows.append(
                Row(
                    f"tool call {tool} {path}",
                    median(ours),
                    median(ref),
                    "bare FastMCP",
                    goal=ratio_at_most(1.2),
                    measures=f"median of {len(ours)} calls in one client session, against the "
                    "same calls to bare FastMCP serving the same tools, alternating rounds",
                )
            )
    return rows


async def first_call_row(folder: Path, dsn: str, env: dict[str, str], starts: int) -> Row:
    """The first call on each of ``starts`` fresh daemons, against later ones on the same."""
    first: list[float] = []
    warm: list[float] = []
    for _ in range(starts):
        port = free_port()
        with DaemonProcess(folder, port=port, database_url=dsn, env=env) as daemon:
            url = f"{daemon.url}/mcp"
            first.append(await fresh_call(url))
            warm += [await fresh_call(url) for _ in range(3)]
    return Row(
        "first tool call after /health",
        median(first),
        median(warm),
        "the same call later, same daemons",
        goal=ratio_at_most(1.5),
        measures=f"median over {starts} fresh daemons of the first new client session and "
        f"status call once /health answers, against the median of {len(warm)} later ones "
        "(the 2nd to 4th call of each daemon)",
    )


async def measure(
    dsn: str, calls: int, env: dict[str, str], tmp: Path, starts: int = 5
) -> list[Row]:
    """Every tool-call row, each beside its reference from the same run."""
    port = free_port()
    schema = f"bench_tc_{port}"
    folder = write_butler(tmp / "roster", "toolcalls", port=port, schema=schema)
    try:
        with DaemonProcess(folder, port=port, database_url=dsn, env=env) as daemon:
            with BareFastMCP(folder, dsn) as bare:
                rows = await warm_rows(daemon.url, bare, calls)
        rows.append(await first_call_row(folder, dsn, env, starts))
    finally:
        await drop_schema(dsn, schema)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {"BUTLER_DATA_DIR": str(Path(tmp) / "data"), "ANTHROPIC_API_KEY": "sk-bench"}
        rows = asyncio.run(measure(args.database_url, args.calls, env, Path(tmp), args.starts))
    print(table(rows, verdicts=True))


if __name__ == "__main__":
    main()
