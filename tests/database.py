"""The suite's PostgreSQL, found or started once per test run.

In order: ``TEST_DATABASE_URL``; else the server answering on
127.0.0.1:``BUTLER_TEST_PG_PORT`` (5432 unless set); else one embedded
PostgreSQL (the package the daemon itself falls back to), started by the first
pytest process of the run. That process puts its DSN in ``TEST_DATABASE_URL``,
so the xdist workers it starts afterwards inherit the same server instead of
each starting their own; it stops the server when the run ends.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import socket
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from butler.store.embedded import EmbeddedPostgres

#: Moves the probed local server off 5432 (a port with nothing on it forces the embedded one).
PORT_VARIABLE = "BUTLER_TEST_PG_PORT"


def answering(host: str, port: int) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def endpoints(dsn: str) -> tuple[list[tuple[str, int]], list[str]]:
    """Where the server of ``dsn`` answers: its TCP addresses and its Unix sockets.

    A ``host`` that is a folder (``?host=/run/...``, as the embedded server's DSN
    has) is a socket folder; libpq's default port 5432 names the socket file.
    """
    parts = urlsplit(dsn)
    port = parts.port or 5432
    hosts = [unquote(parts.hostname)] if parts.hostname else []
    hosts += parse_qs(parts.query).get("host", [])
    if not hosts:
        hosts = ["/var/run/postgresql"]
    tcp = [(h, port) for h in hosts if not h.startswith("/")]
    unix = [f"{h}/.s.PGSQL.{port}" for h in hosts if h.startswith("/")]
    return tcp, unix


class SuiteDatabase:
    """The DSN every test uses, and the embedded server behind it when one was started."""

    def __init__(self) -> None:
        self.dsn = ""
        self.embedded: EmbeddedPostgres | None = None
        self._folder: Path | None = None

    def open(self) -> str:
        """Find or start the server; return its DSN."""
        configured = os.environ.get("TEST_DATABASE_URL")
        if configured:
            self.dsn = configured
            return self.dsn
        port = int(os.environ.get(PORT_VARIABLE) or 5432)
        if answering("127.0.0.1", port):
            self.dsn = f"postgresql://postgres@127.0.0.1:{port}/test"
        else:
            self.dsn = self._start_embedded()
            os.environ["TEST_DATABASE_URL"] = self.dsn
        return self.dsn

    def _start_embedded(self) -> str:
        self._folder = Path(tempfile.mkdtemp(prefix="butler-test-pg-"))
        self.embedded = EmbeddedPostgres(self._folder / "pgdata")
        # Also when imported outside pytest (the benchmarks import the fixtures).
        atexit.register(self.close)
        return asyncio.run(self.embedded.start())

    def close(self) -> None:
        """Stop the embedded server this process started, and delete its data."""
        embedded, self.embedded = self.embedded, None
        if embedded is not None:
            asyncio.run(embedded.stop())
            os.environ.pop("TEST_DATABASE_URL", None)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
