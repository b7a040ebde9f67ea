"""CPU time of the ``butler`` commands a person types most, beside ``python -c pass``.

Each command runs as the installed ``butler`` script would, several times; a
row is its median CPU time (user + system, of the process and whatever it
waited for, from ``wait4``). Commands that talk to a daemon (``builders stop`` of an
unknown builder, ``sessions``) find one running with the ``command`` runtime,
and ``credentials list`` reads the database given.

    .venv/bin/python benchmarks/cli.py [--runs 7] [--database-url URL]

The goal: under 300 ms of CPU each for ``--help``, ``token``, ``list``,
``credentials`` and ``builders stop`` on a quiet machine.

Then the wall-clock time of what a person waits for when something is in the
way, each beside ``butler --version``: ``butler run`` of a butler already
running, and of one whose port another program holds, until the one line
saying so (goal: under 1 s); ``butler notify test`` to a local webhook
(no database opened).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import DEFAULT_DSN, REPO, drop_schema, median
from rows import Row, at_most, table

from tests.helpers import DaemonProcess, free_port, write_butler
from tests.servers.webhook import Webhook

BUTLER = Path(sys.executable).with_name("butler")
TOKEN = "bench-cli-owner-token-0123456789abcdef"
REFERENCE = "`python -c pass`"
#: The commands the goal names (issue 26): each under this many ms of CPU.
GOAL_MS = 300
GOAL_FOR = ("--help", "token", "list", "credentials", "builders")
#: A refusal that names what is in the way, in wall-clock ms, from the command's start.
REFUSAL_GOAL_MS = 1000


def cpu_ms(argv: list[str], env: dict[str, str]) -> float:
    """CPU milliseconds one run of ``argv`` took (its own and its reaped children's)."""
    proc = subprocess.Popen(
        argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped by wait4; Popen must not wait for it again
    return (usage.ru_utime + usage.ru_stime) * 1000


def wall_ms(argv: list[str], env: dict[str, str]) -> float:
    """Wall-clock milliseconds from starting ``argv`` to its exit."""
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=REPO, capture_output=True, check=False)
    return (time.perf_counter() - started) * 1000


def waits(folder: Path, port: int, taken: int, hook: str, env: dict[str, str], runs: int):
    """(label, median wall ms, goal) of each refusal and the local notify test."""
    butler = [str(BUTLER)]
    cases = {
        "butler run of a butler already running, to its refusal": (
            [*butler, "run", "-c", str(folder), "--port", str(port + 1)],
            at_most(REFUSAL_GOAL_MS, "ms"),
        ),
        "butler run on a port another program holds, to its refusal": (
            [*butler, "run", "-c", str(folder), "--port", str(taken)],
            at_most(REFUSAL_GOAL_MS, "ms"),
        ),
        "butler notify test to a local webhook": (
            [*butler, "notify", "test", "-c", str(folder), "--channel", hook],
            None,
        ),
    }
    found = []
    for label, (argv, goal) in cases.items():
        wall_ms(argv, env)  # warms the file cache; not counted
        found.append((label, median([wall_ms(argv, env) for _ in range(runs)]), goal))
    return found


def commands(folder: Path, roster: Path) -> dict[str, list[str]]:
    """Each measured command line, by the words its row shows."""
    config = ["-c", str(folder)]
    return {
        "butler --help": ["--help"],
        "butler --version": ["--version"],
        "butler token": ["token", *config],
        "butler list": ["list", "--roster", str(roster)],
        "butler credentials list": ["credentials", "list", *config],
        "butler builders stop (refused by the daemon)": [
            "builders",
            "stop",
            "no-such-builder",
            *config,
        ],
        "butler sessions": ["sessions", *config],
        "butler adapter check_status (unknown to the daemon)": [
            "adapter",
            "check_status",
            "9e0f2a57-0000-4000-8000-000000000000",
            *config,
        ],
    }


def measure(dsn: str, runs: int, tmp: Path) -> list[Row]:
    """One row per command: its median CPU ms, beside ``python -c pass``'s."""
    # As a person's install runs: with compiled bytecode (pip writes it; an editable
    # install writes it on the first run, which is not counted). A shell that says
    # PYTHONDONTWRITEBYTECODE would have every run compile butler's own modules again.
    dropped = ("DATABASE_URL", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(BUTLER_DATA_DIR=str(tmp / "data"), DATABASE_URL=dsn, BUTLER_TOKEN=TOKEN)
    schema = f"bench_cli_{uuid.uuid4().hex[:8]}"
    roster = tmp / "roster"
    runtime = {"type": "command", "command": ["echo", "done"]}
    port = free_port()
    hook = Webhook()
    extra = f'\n[butler.notify.channels]\nhook = "{hook.url()}"\n'
    folder = write_butler(roster, "cli", port=port, schema=schema, runtime=runtime, extra=extra)
    reference = [cpu_ms([sys.executable, "-c", "pass"], env) for _ in range(runs)]
    version = [str(BUTLER), "--version"]
    wall_floor = median([wall_ms(version, env) for _ in range(runs)])
    found = []
    daemon = DaemonProcess(folder, port=port, database_url=dsn, env=env, token=TOKEN)
    try:
        daemon.start()
        for label, args in commands(folder, roster).items():
            argv = [str(BUTLER), *args]
            cpu_ms(argv, env)  # warms the file cache; not counted
            found.append((label, median([cpu_ms(argv, env) for _ in range(runs)])))
        with hook, socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            waited = waits(folder, port, taken.getsockname()[1], "hook", env, runs)
    finally:
        daemon.stop()
        asyncio.run(drop_schema(dsn, schema))
    floor = median(reference)
    return [
        Row(
            f"CLI CPU: {label}",
            ours,
            floor,
            REFERENCE,
            goal=at_most(GOAL_MS, "ms") if has_goal(label) else None,
            measures=f"median CPU (user + system, wait4) of {runs} runs of `{label}`",
        )
        for label, ours in found
    ] + [
        Row(
            f"wall: {label}",
            ours,
            wall_floor,
            "`butler --version`",
            goal=goal,
            measures=f"median wall-clock ms of {runs} runs, from its start to its exit",
        )
        for label, ours, goal in waited
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--database-url", default=DEFAULT_DSN)
    args = parser.parse_args()
    machine = f"{platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"machine: {machine}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as work:
        rows = measure(args.database_url, args.runs, Path(work))
    print(table(rows, verdicts=True))
    print(f"load at the end: {os.getloadavg()}")


def has_goal(command: str) -> bool:
    """Whether the goal names this command (``butler token``, ``butler builders stop (...)``...)."""
    return command.split()[1] in GOAL_FOR


if __name__ == "__main__":
    main()
