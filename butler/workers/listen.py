"""PgQueuer's LISTEN, made again after the database went away (PgQueuer issue #224).

PgQueuer's pool driver LISTENs on one pooled connection, once: a database outage
(a restart, a failover) closes it for good, and the worker then takes work only
by PgQueuer's poll (``dequeue_timeout``, 30 s by default) until it restarts.
This driver LISTENs on a connection of its own and, when that connection is
lost, connects again (with a growing pause while the database is still away)
and LISTENs again; then it wakes its listeners once, since what was queued while
nobody listened sent its NOTIFY to no one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Self

import asyncpg
from pgqueuer import AsyncpgPoolDriver

from butler.store.outages import FIRST_BACKOFF_S, MAX_BACKOFF_S, UNREACHABLE

log = logging.getLogger(__name__)

#: What PgQueuer listens with: called with each NOTIFY's payload.
NotifyCallback = Callable[[str | bytes | bytearray], None]


@dataclass(frozen=True)
class Relay:
    """An asyncpg listener passing only the payload on (equal for one callback, as
    asyncpg's remove_listener needs)."""

    callback: NotifyCallback

    def __call__(self, _conn: object, _pid: object, _channel: object, payload: object) -> None:
        if isinstance(payload, (str, bytes, bytearray)):
            self.callback(payload)


def woken(channel: str) -> str:
    """A NOTIFY payload as PgQueuer's table trigger sends it: the queue may have changed."""
    return json.dumps(
        {
            "channel": channel,
            "operation": "insert",
            "sent_at": datetime.now(UTC).isoformat(),
            "table": "pgqueuer",
            "type": "table_changed_event",
        }
    )


class RelisteningDriver(AsyncpgPoolDriver):
    """Queries on ``pool``; LISTEN on a connection from ``connect``, made again when lost."""

    def __init__(
        self, pool: asyncpg.Pool, connect: Callable[[], Awaitable[asyncpg.Connection]]
    ) -> None:
        super().__init__(pool)
        self._connect = connect
        # Its own lock and count, not the base class's (they are PgQueuer's internals).
        self._listening = asyncio.Lock()
        self._users = 0
        self._channels: list[tuple[str, NotifyCallback]] = []
        self._conn: asyncpg.Connection | None = None
        self._again: asyncio.Task[None] | None = None
        self._closing = False

    async def add_listener(self, channel: str, callback: NotifyCallback) -> None:
        async with self._listening:
            self._channels.append((channel, callback))
            if self._conn is None:
                self._conn = await self._open()
            else:
                await self._conn.add_listener(channel, Relay(callback))

    async def remove_listener(self, channel: str, callback: NotifyCallback) -> None:
        async with self._listening:
            with contextlib.suppress(ValueError):
                self._channels.remove((channel, callback))
            if self._conn is not None and not self._conn.is_closed():
                await self._conn.remove_listener(channel, Relay(callback))

    async def __aenter__(self) -> Self:
        self._users += 1
        self._closing = False  # entered again: a queue loop started again (worker.py)
        return self

    async def __aexit__(self, *_: object) -> None:
        # PgQueuer enters one driver from two managers; only the last exit closes.
        self._users -= 1
        if self._users > 0:
            return
        self._closing = True
        if self._again is not None:
            self._again.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._again
        async with self._listening:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    await self._conn.close()
                self._conn = None
            self._channels = []  # a loop started again listens afresh

    async def _open(self) -> asyncpg.Connection:
        conn = await self._connect()
        try:
            for channel, callback in self._channels:
                await conn.add_listener(channel, Relay(callback))
        except BaseException:
            conn.terminate()
            raise
        conn.add_termination_listener(self._lost)
        return conn

    def _lost(self, _conn: object) -> None:
        if not self._closing and (self._again is None or self._again.done()):
            log.warning("the queue's LISTEN connection is lost: connecting again")
            self._again = asyncio.get_running_loop().create_task(self._listen_again())

    async def _listen_again(self) -> None:
        delay = FIRST_BACKOFF_S
        while True:
            try:
                async with self._listening:
                    self._conn = await self._open()
                break
            except Exception as exc:  # the database still away, or refusing us for now
                if not isinstance(exc, (*UNREACHABLE, asyncpg.PostgresError)):
                    log.warning(
                        "the queue's LISTEN could not be made: %s: %s", type(exc).__name__, exc
                    )
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF_S)
        log.info("the queue's LISTEN is back: looking for work queued meanwhile")
        for channel, callback in list(self._channels):
            callback(woken(channel))
