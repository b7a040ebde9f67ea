"""A cap on the connections a roster's pools open to one server, together.

A pool per butler keeps its connections apart (each has its schema as its
``search_path``), so a hundred butlers that each ran a query in the last
minutes would hold a hundred connections, and a server allows 100 by
default. With a :class:`Budget` the pools of a large roster open at most
``limit`` between them: a pool that needs one more when all are open closes
the connection idle longest, in whichever pool, and waits only while every
one is running a query. A butler in use keeps its connection; one idle
while ``limit`` others work pays a connect (a few ms) at its next query.
The cap counts connections open or opening; a connection closed to make
room may be seen a moment longer beside its replacement (its socket is
closed on a later turn of the loop).
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg

#: Connections a large roster's pools open to one server, together.
ROSTER_CONNECTIONS = 20


class Budget:
    """Connections opened through :meth:`connect` (a pool's ``connect``), at most ``limit``.

    The pools tell it which of them are idle through their ``setup`` and
    ``reset`` hooks (:meth:`acquired`, :meth:`released`), which cost no round trip.
    """

    def __init__(self, limit: int = ROSTER_CONNECTIONS) -> None:
        self.limit = limit
        self._open: set[asyncpg.Connection] = set()
        #: Idle connections, longest idle first (a dict keeps insertion order).
        self._idle: dict[asyncpg.Connection, None] = {}
        self._by_pid: dict[int, asyncpg.Connection] = {}
        self._opening = 0
        self._room = asyncio.Event()
        #: The most open at once.
        self.peak = 0

    @property
    def open(self) -> int:
        return len(self._open)

    async def connect(self, *args: Any, **kwargs: Any) -> asyncpg.Connection:
        """A new connection once the budget has room, made by closing the longest idle."""
        while len(self._open) + self._opening >= self.limit:
            if self._idle:
                self._close(next(iter(self._idle)))
                continue
            self._room.clear()
            await self._room.wait()
        self._opening += 1
        try:
            conn: asyncpg.Connection = await asyncpg.connect(*args, **kwargs)
        finally:
            self._opening -= 1
            self._room.set()  # a failed connect leaves its place to a waiter
        pid = conn.get_server_pid()  # not asked once closed
        self._open.add(conn)
        self._by_pid[pid] = conn
        self.peak = max(self.peak, len(self._open))
        conn.add_termination_listener(lambda *_: self._forget(conn, pid))
        return conn

    def _close(self, conn: asyncpg.Connection) -> None:
        # Idle in its pool: the pool opens another at its next acquire.
        self._forget(conn, conn.get_server_pid())
        conn.terminate()

    def _forget(self, conn: asyncpg.Connection, pid: int) -> None:
        """Closed: by the budget, by its pool (idle too long, closing) or by the server."""
        self._idle.pop(conn, None)
        self._open.discard(conn)
        if self._by_pid.get(pid) is conn:
            del self._by_pid[pid]
        self._room.set()

    async def acquired(self, proxy: Any) -> None:
        """A pool's ``setup``: the connection it hands out is busy."""
        conn = self._by_pid.get(proxy.get_server_pid())
        if conn is not None:
            self._idle.pop(conn, None)

    async def released(self, conn: asyncpg.Connection) -> None:
        """Called from a pool's ``reset``: the connection is idle, the newest idle."""
        if conn in self._open:
            self._idle.pop(conn, None)
            self._idle[conn] = None
            self._room.set()
