"""Three butlers of one roster for the roster page's tests: their folders and schemas, the
process serving them, and waiting until it answers."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from asyncpg.utils import _quote_ident as quote_ident

from tests.dashboard.conftest import FIFO_AGENT, run_sql
from tests.helpers import (
    REPO,
    free_port,
    get_json,
    wait_until,
    write_butler,
)

NAMES = ("alpha", "beta", "gamma")

RUNTIME = {"type": "command", "command": [sys.executable, str(FIFO_AGENT), "{prompt_file}"]}

SCHEDULE = """
[[butler.schedule]]
name = "digest"
cron = "30 7 * * *"
timezone = "Europe/Paris"
prompt = "Send the digest"
"""


@pytest.fixture
def three(roster: Path) -> Iterator[dict[str, str]]:
    """Three butlers in a roster, each in its own schema (dropped after); schema by name."""
    prefix = f"t_{uuid.uuid4().hex[:8]}"
    schemas = {name: f"{prefix}_{name}" for name in NAMES}
    for name in NAMES:
        extra = SCHEDULE if name == "alpha" else ""
        write_butler(roster, name, port=free_port(), schema=schemas[name], runtime=RUNTIME,
                     extra=extra)  # fmt: skip
    yield schemas
    for schema in schemas.values():
        run_sql("public", f"DROP SCHEMA IF EXISTS {quote_ident(schema)} CASCADE")


@contextlib.contextmanager
def process(argv: list[str], log: Path) -> Iterator[subprocess.Popen]:
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def answering(url: str, proc: subprocess.Popen, log: Path) -> None:
    def up() -> bool:
        assert proc.poll() is None, log.read_text()
        try:
            return get_json(f"{url}/health")[0] == 200
        except OSError:
            return False

    wait_until(up, timeout=90)


def configured_port(folder: Path) -> int:
    lines = (folder / "butler.toml").read_text().splitlines()
    return int(next(ln for ln in lines if ln.startswith("port")).split("=")[1])
