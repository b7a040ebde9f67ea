"""A roster served by ``butler up`` in a process of its own: start it, wait until every
butler answers, ask them, read what they keep. Shared by the tests of ``up``."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from subprocess import Popen

import asyncpg

from butler.store.db import quote_ident
from tests.conftest import TEST_DSN
from tests.helpers import (
    REPO,
    butler_client,
    get_json,
    wait_until,
)


def butler_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "butler.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


def healthy(port: int) -> bool:
    try:
        status, body = get_json(f"http://127.0.0.1:{port}/health", timeout=1)
    except OSError:
        return False
    return status == 200 and body["status"] == "ok"  # 200 only while the database answers


def table_rows(text: str) -> dict[str, list[str]]:
    """The body rows of a rich table, by their first cell."""
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in text.splitlines()]
    return {row[0]: row for row in rows if row}


async def call(port: int, tool: str, **arguments: object) -> object:
    async with butler_client(f"http://127.0.0.1:{port}/mcp") as client:
        return (await client.call_tool(tool, arguments)).data


@contextlib.contextmanager
def roster_up(roster: Path, log: Path, *args: str, env: dict[str, str]) -> Iterator[Popen]:
    """``butler up`` as a real process; killed if the test did not stop it."""
    argv = [sys.executable, "-m", "butler.cli", "up", "--roster", str(roster), *args]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_healthy(proc: Popen, ports: list[int], log: Path) -> None:
    wait_until(lambda: proc.poll() is not None or all(healthy(p) for p in ports), timeout=90)
    assert proc.poll() is None, log.read_text()


def gated_runtime(gate: Path) -> dict[str, object]:
    """A runtime that runs until the test opens ``gate`` (a FIFO) and closes it."""
    os.mkfifo(gate)
    script = "import sys; open(sys.argv[1]).read(); print('done: ' + open(sys.argv[2]).read())"
    argv = [sys.executable, "-c", script, str(gate), "{prompt_file}"]
    return {"type": "command", "command": argv}


def release(gate: Path) -> None:
    """Let the runtime reading ``gate`` finish, once it has opened it."""

    def opened() -> int | None:
        try:
            return os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: no reader yet
            return None

    os.close(wait_until(opened))


async def session_statuses(schema: str) -> list[str]:
    conn = await asyncpg.connect(TEST_DSN)
    try:
        rows = await conn.fetch(f"SELECT status FROM {quote_ident(schema)}.sessions")
    finally:
        await conn.close()
    return [r["status"] for r in rows]
