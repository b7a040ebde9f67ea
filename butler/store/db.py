"""The butler's connection pool, confined to the butler's own schema.

Every connection of the pool has ``search_path`` set to the butler's schema,
so one PostgreSQL server can hold a whole roster and no butler reads
another's tables.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

from butler.errors import DatabaseError
from butler.store.budget import Budget

#: How long a connection of a pool without a floor stays open unused (asyncpg's default).
IDLE_CLOSE_S = 300.0


def quote_ident(name: str) -> str:
    """Quote an SQL identifier (schema names are validated, this is belt and braces)."""
    return '"' + name.replace('"', '""') + '"'


async def _init_connection(conn: asyncpg.Connection) -> None:
    for kind in ("jsonb", "json"):
        await conn.set_type_codec(kind, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Nothing to undo when a connection goes back to the pool: no query round trip.

    asyncpg's default reset sends ``pg_advisory_unlock_all(); CLOSE ALL;
    UNLISTEN *; RESET ALL`` after every statement run through the pool, one
    round trip in two of a session's. The daemon leaves none of that state:
    ``search_path`` is a setting of the connection itself, nothing listens or
    keeps a cursor, and the one advisory lock (migrations) is released by the
    code that took it. An open transaction is still rolled back: the pool
    does that before it calls this.
    """


def redact_dsn(dsn: str) -> str:
    """A DSN fit for a log line: the password, if any, replaced."""
    if "@" not in dsn or "://" not in dsn:
        return dsn
    scheme, rest = dsn.split("://", 1)
    creds, host = rest.rsplit("@", 1)
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user}{':***' if ':' in creds else ''}@{host}"


class Database:
    """An asyncpg pool bound to one schema.

    ``min_size`` is the pool's floor of open connections: 1 keeps one warm
    for the daemon's first query; 0 (a large roster's butlers) opens one at
    first use and closes it after :data:`IDLE_CLOSE_S` unused, so a hundred
    idle butlers hold no connection. ``probe`` then answers :meth:`ping`
    while the pool holds none, instead of opening one to say so; ``budget``
    caps the connections of all the roster's pools together
    (:mod:`butler.store.budget`).
    """

    def __init__(
        self,
        dsn: str,
        schema: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        probe: Callable[[], Awaitable[bool]] | None = None,
        budget: Budget | None = None,
        create_schema: bool = True,
    ) -> None:
        self.dsn = dsn
        self.schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self.probe = probe
        self.budget = budget
        #: Whether :meth:`connect` makes the schema: a worker's own role may not (nor
        #: needs to: its daemon made it), and PostgreSQL checks the right even when it exists.
        self.create_schema = create_schema
        self._pool: asyncpg.Pool | None = None

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise DatabaseError("database is not connected")
        return self._pool

    async def connect(self) -> None:
        """Open the pool and create the schema if needed, on the pool's first connection."""
        pool = None
        try:
            pool = await self._new_pool()
            conn = await pool.acquire(timeout=10)
        except (OSError, asyncpg.PostgresError, TimeoutError, ValueError) as exc:
            if pool is not None:
                await pool.close()
            raise DatabaseError(
                f"cannot connect to PostgreSQL at {redact_dsn(self.dsn)}: {exc}; "
                "expected a reachable server (set DATABASE_URL, or leave it unset "
                "for the embedded one)"
            ) from None
        if not self.create_schema:
            await pool.release(conn)
            self._pool = pool
            return
        try:
            # search_path may name a schema not made yet: PostgreSQL skips it until it is.
            await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(self.schema)}")
        except asyncpg.UniqueViolationError:
            pass  # another butler created it at the same moment
        except asyncpg.PostgresError as exc:
            await pool.release(conn)
            await pool.close()
            raise DatabaseError(
                f"cannot create schema {self.schema!r} at {redact_dsn(self.dsn)}: {exc}; "
                "expected a role allowed to create schemas"
            ) from None
        await pool.release(conn)
        self._pool = pool

    async def _new_pool(self) -> asyncpg.Pool:
        budget = self.budget
        hooks: dict[str, Any] = {"reset": _keep_session}
        if budget is not None:

            async def reset(conn: asyncpg.Connection) -> None:
                await budget.released(conn)

            hooks = {"connect": budget.connect, "setup": budget.acquired, "reset": reset}
        return await asyncpg.create_pool(
            self.dsn,
            min_size=self._min_size,
            max_size=self._max_size,
            max_inactive_connection_lifetime=IDLE_CLOSE_S,
            init=_init_connection,
            server_settings={"search_path": quote_ident(self.schema)},
            timeout=10,
            **hooks,
        )

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def ping(self) -> bool:
        """Whether the database answers right now."""
        if self._pool is None:
            return False
        if self.probe is not None and self._pool.get_size() == 0:
            return await self.probe()  # no connection open: ask without opening one
        try:
            async with self._pool.acquire(timeout=2) as conn:
                await conn.fetchval("SELECT 1")
        except (
            OSError,
            asyncpg.PostgresError,
            TimeoutError,
            asyncpg.InterfaceError,
            asyncpg.InternalClientError,  # a query cut off by the server going away
        ):
            return False
        return True

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        return await self.pool.fetch(query, *args)

    async def fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None:
        return await self.pool.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any) -> Any:
        return await self.pool.fetchval(query, *args)

    async def execute(self, query: str, *args: Any) -> str:
        return await self.pool.execute(query, *args)
