"""The genuine Claude Code and Codex, jailed against unjailed, through the daemon, in one run.

For each CLI two daemons run the same butler on the pinned CLI of
``clis/node_modules`` against one fake model server on loopback: one with
``[butler.sandbox] mode`` left at its default (the jail: bubblewrap, the
seccomp filter, the egress proxy), one with ``mode = "none"``. Every session
is the same prompt and the same scripted answer: one call of the butler's
own ``state_set`` tool, then a line of text, so each session makes two model
requests and one MCP tool call through whatever the jail puts in between.

Sessions go one at a time, one MCP client per daemon (connected before the
clock starts), interleaved jailed, raw, raw, jailed... across both CLIs so
that the machine's load hits every series alike. One warm-up session per
daemon is not counted (a daemon's first session pays imports and its first
``tools/list``). Beside each session's time, its CPU: the daemon's and that of
every descendant it reaped (the CLI, bubblewrap, the jail's bridge), which
the machine's load moves far less than the times.

    .venv/bin/python benchmarks/genuine.py [--sessions 15] [--smoke] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DEFAULT_DSN, drop_schema, median, proc_cpu_s
from rows import Row, ratio_at_most, table

from tests.conformance.runtimes import CASES
from tests.fakes.model_server import FakeModelServer, Text, ToolCall
from tests.helpers import DaemonProcess, butler_client, free_port, write_butler

#: The goal of each CLI: its jailed median session at most this times its unjailed one.
GOALS = {"claude-code": 1.03, "codex": 1.10}
MODES = ("jailed", "none")
ANSWER = "Noted."
PROMPT = "Remember that the colour is teal, then say Noted."


class TimedModel(FakeModelServer):
    """The fake model server, noting when each model request arrived (``perf_counter``)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    async def _record(self, api: str, request: Any) -> Any:
        if api not in ("unknown", "models"):
            self.arrivals.append(time.perf_counter())
        return await super()._record(api, request)


@dataclass
class Series:
    """One CLI in one mode: its daemon and what its sessions took (ms)."""

    cli: str
    mode: str
    daemon: DaemonProcess
    schema: str
    sessions: list[float] = field(default_factory=list)
    #: The daemon's own ``duration_ms`` of each session (slot taken to the runtime's result).
    recorded: list[float] = field(default_factory=list)
    #: From the trigger call to the CLI's first model request.
    first_request: list[float] = field(default_factory=list)
    #: CPU of the daemon and of every descendant it reaped, over each session.
    cpu: list[float] = field(default_factory=list)

    def cpu_s(self) -> float:
        assert self.daemon.proc is not None
        return sum(proc_cpu_s(self.daemon.proc.pid))


def _daemon(cli: str, mode: str, model_url: str, dsn: str, tmp: Path) -> Series:
    case = CASES[cli]
    name = f"{cli.replace('-', '')}{mode}"
    port, schema = free_port(), f"bench_genuine_{uuid.uuid4().hex[:10]}"
    runtime: dict[str, Any] = {"type": case.type, "cli_path": str(case.binary)}
    if case.model:
        runtime["model"] = case.model
    if case.args(model_url):
        runtime["args"] = case.args(model_url)
    values = case.env(model_url)
    extra = "\n[butler.env]\noptional = " + json.dumps(sorted(values)) + "\n"
    if mode == "none":
        extra += '\n[butler.sandbox]\nmode = "none"\n'
    folder = write_butler(tmp / name, name, port=port, schema=schema, runtime=runtime, extra=extra)
    for relative, text in case.files.items():
        (folder / relative).write_text(text, encoding="utf-8")
    env = {**values, "BUTLER_DATA_DIR": str(tmp / name / "data")}
    daemon = DaemonProcess(folder, port=port, database_url=dsn, env=env)
    # The file's mode decides, as it does for an owner: no override from the caller.
    daemon.env.pop("BUTLER_SANDBOX", None)
    return Series(cli, mode, daemon, schema)


async def _session(client: Any, series: Series, model: TimedModel, count: bool) -> None:
    """One trigger to its answer; its figures noted when ``count``."""
    model.arrivals.clear()
    cpu = series.cpu_s()
    started = time.perf_counter()
    result = await client.call_tool("trigger", {"prompt": PROMPT, "timeout_s": 120})
    took = time.perf_counter() - started
    spent = series.cpu_s() - cpu
    content = result.structured_content or {}
    if not content.get("success") or content.get("output", "").strip() != ANSWER:
        raise SystemExit(f"{series.cli} ({series.mode}) session failed: {content}")
    if len(model.arrivals) != 2:
        raise SystemExit(f"{series.cli} ({series.mode}): {len(model.arrivals)} model requests")
    if count:
        series.sessions.append(took * 1000)
        series.recorded.append(float(content["duration_ms"]))
        series.first_request.append((model.arrivals[0] - started) * 1000)
        series.cpu.append(spent * 1000)


def _check_jailed(series: Series) -> None:
    """The default mode fell back to no jail only with its loud line in the log."""
    log = series.daemon.log_path.read_text(errors="replace")
    if series.mode == "jailed" and "SANDBOX OFF" in log:
        where = series.daemon.log_path
        raise SystemExit(f"{series.cli}: the default mode ran unjailed here (see {where})")


async def _run(all_series: list[Series], model: TimedModel, sessions: int) -> None:
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(butler_client(f"{s.daemon.url}/mcp", timeout=180))
            for s in all_series
        ]
        pairs = list(zip(clients, all_series, strict=True))
        for client, series in pairs:
            await _session(client, series, model, count=False)
        for i in range(sessions):
            # ABBA: neither mode always goes first after the other CLI.
            for client, series in pairs if i % 2 == 0 else reversed(pairs):
                await _session(client, series, model, count=True)


def _rows(cli: str, jailed: Series, raw: Series) -> list[Row]:
    n = len(jailed.sessions)
    goal = GOALS[cli]
    return [
        Row(
            f'genuine {cli} session, jailed vs `mode = "none"`',
            median(jailed.sessions),
            median(raw.sessions),
            '`mode = "none"`',
            goal=ratio_at_most(goal),
            measures=f"median of {n} sessions of the genuine {cli} through the daemon, from the "
            "client's `trigger` call to its answer (one model request asking for `state_set`, "
            "the tool call, one answering), jailed by the default mode against the same "
            'butler with `mode = "none"`, interleaved',
        ),
        Row(
            f"genuine {cli}, trigger to its first model request, jailed vs none",
            median(jailed.first_request),
            median(raw.first_request),
            '`mode = "none"`',
            measures=f"median of {n}: from the `trigger` call to the fake model receiving the "
            "CLI's first request (the session's admission, home, jail and the CLI's own start, "
            "up to its first model request)",
        ),
        Row(
            f"genuine {cli}, the daemon's session duration, jailed vs none",
            median(jailed.recorded),
            median(raw.recorded),
            '`mode = "none"`',
            measures=f"median of {n} of the session's `duration_ms` as the daemon records it "
            "(slot taken to the runtime's result: home, jail and the CLI's whole run)",
        ),
        Row(
            f"genuine {cli}, CPU per session, jailed vs none",
            median(jailed.cpu),
            median(raw.cpu),
            '`mode = "none"`',
            measures=f"median of {n}: CPU of the daemon and of the descendants it reaped "
            "(`/proc/<pid>/stat`), before and after each session: the CLI, the jail (bubblewrap, "
            "its bridge and its watcher) and the daemon's side (egress proxy, MCP server); "
            "little moved by the machine's load, unlike the times above",
        ),
    ]


def measure(dsn: str, sessions: int, tmp: Path) -> list[Row]:
    """Rows of the genuine Claude Code and Codex, each jailed beside unjailed."""
    for cli in GOALS:
        missing = CASES[cli].recipe.missing_reason()
        if missing:
            raise SystemExit(f"{missing} (or run scripts/setup-dev)")
    with TimedModel() as model, ExitStack() as stack:
        model.script = [ToolCall("state_set", {"key": "colour", "value": "teal"}), Text(ANSWER)]
        all_series = [_daemon(c, m, model.url, dsn, tmp) for c in GOALS for m in MODES]
        try:
            for series in all_series:
                stack.enter_context(series.daemon)
            asyncio.run(_run(all_series, model, sessions))
            for series in all_series:
                _check_jailed(series)
        finally:
            stack.close()
            for series in all_series:
                asyncio.run(drop_schema(dsn, series.schema))
    rows: list[Row] = []
    for i, cli in enumerate(GOALS):
        rows += _rows(cli, all_series[2 * i], all_series[2 * i + 1])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=15, help="counted sessions per series")
    parser.add_argument("--smoke", action="store_true", help="2 sessions each, no verdicts")
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    sessions = 2 if args.smoke else args.sessions
    print(f"load at the start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as work:
        rows = measure(args.database_url, sessions, Path(work))
    print(table(rows, verdicts=not args.smoke))
    print(f"load at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
