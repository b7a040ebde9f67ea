"""The suite's PostgreSQL, found or started on first use, once per test run.

In order: ``TEST_DATABASE_URL``; else the server answering on
127.0.0.1:``BUTLER_TEST_PG_PORT`` (5432 unless set); else one embedded
PostgreSQL (the package the daemon itself falls back to). Nothing is looked
for until a test asks for the database (the ``pg_dsn`` or ``db`` fixture, or
``tests.conftest.TEST_DSN``), so the unit tier runs with no server at all.

The embedded server's files go in one folder per run, named by the first
pytest process (:func:`name_run_folder`, before it starts its xdist workers)
in ``BUTLER_TEST_PG_FOLDER``: each worker that needs the server starts or
joins it there (the embedded server is shared by every process of its folder,
and stops when the last lets go), and the first process deletes the folder
when the run ends.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import socket
import tempfile
import uuid
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


#: Set (to anything), a run must not touch a database: the unit tier's proof that it needs none.
REFUSE_VARIABLE = "BUTLER_TEST_NO_DATABASE"
#: The folder of this run's embedded server, named by the run's first pytest process.
FOLDER_VARIABLE = "BUTLER_TEST_PG_FOLDER"


def name_run_folder() -> None:
    """Name the run's embedded-server folder, in the first pytest process of a run.

    Not in an xdist worker, which inherits its controller's. Always a new name
    otherwise: a pytest run started by a test must not share its parent's.
    Named only; created by the first process that needs the server.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    name = f"butler-test-pg-{uuid.uuid4().hex[:12]}"
    os.environ[FOLDER_VARIABLE] = str(Path(tempfile.gettempdir()) / name)


class SuiteDatabase:
    """The DSN every test uses, found or started on the first call to :meth:`dsn`."""

    def __init__(self) -> None:
        self._dsn = ""
        self.embedded: EmbeddedPostgres | None = None

    def dsn(self) -> str:
        """Find or start the server on first use; return its DSN."""
        if not self._dsn:
            self._dsn = self._open()
        return self._dsn

    @property
    def opened(self) -> bool:
        """Whether a test of this process has asked for the database yet."""
        return bool(self._dsn)

    def _open(self) -> str:
        if os.environ.get(REFUSE_VARIABLE):
            raise RuntimeError(f"{REFUSE_VARIABLE} is set: this run must not use a database")
        configured = os.environ.get("TEST_DATABASE_URL")
        if configured:
            return configured
        port = int(os.environ.get(PORT_VARIABLE) or 5432)
        if answering("127.0.0.1", port):
            return f"postgresql://postgres@127.0.0.1:{port}/test"
        self.embedded = EmbeddedPostgres(self._folder() / "pgdata")
        # Also when used outside pytest, which calls neither at its end (atexit runs the
        # last registered first: let go, then remove what this process named).
        atexit.register(self.remove_run_folder)
        atexit.register(self.close)
        return asyncio.run(self.embedded.start())

    @staticmethod
    def _folder() -> Path:
        if FOLDER_VARIABLE not in os.environ:  # imported outside a pytest run
            name_run_folder()
        return Path(os.environ[FOLDER_VARIABLE])

    def close(self) -> None:
        """Let go of the embedded server this process joined (the last one out stops it)."""
        embedded, self.embedded = self.embedded, None
        if embedded is not None:
            asyncio.run(embedded.stop())

    def remove_run_folder(self) -> None:
        """In the run's first process, once its workers are done: stop and delete the server.

        A worker killed before it let go leaves the server running: joining and
        leaving once stops it (every other user is gone by now).
        """
        if os.environ.get("PYTEST_XDIST_WORKER") or FOLDER_VARIABLE not in os.environ:
            return
        folder = Path(os.environ[FOLDER_VARIABLE])
        if (folder / "pgdata" / "postmaster.pid").exists():
            left = EmbeddedPostgres(folder / "pgdata")
            asyncio.run(left.start())
            asyncio.run(left.stop())
        shutil.rmtree(folder, ignore_errors=True)


#: The one per test process.
SUITE = SuiteDatabase()
