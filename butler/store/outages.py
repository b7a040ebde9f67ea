"""Which database errors mean "not now" rather than "never", and how a step waits one out.

A write the database cannot take during an outage is retried or waited out
(a session's completion, a worker's result, a wait for one); a write it
refuses for what it holds is not, since no retry can change it. The line
between them is drawn here, once, for every part that retries: drawn too
narrowly, a failover or a burst of connections was taken for a refusal and
a finished session's outcome was dropped. :func:`through_outage` is the one
bounded wait for a step to go through; the pauses of every retry loop start
and grow as it says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg

from butler.errors import DatabaseError

T = TypeVar("T")

#: The database cannot be reached, or cannot take a write, right now: it will again.
UNREACHABLE = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,  # a query cut off by the server going away
    asyncpg.PostgresConnectionError,  # class 08
    asyncpg.OperatorInterventionError,  # class 57: the server shutting down
    asyncpg.InsufficientResourcesError,  # class 53: disk full, too many connections
    asyncpg.ReadOnlySQLTransactionError,  # 25006: a standby, during a failover
    asyncpg.TransactionRollbackError,  # class 40: a serialization failure, a deadlock
    asyncpg.LockNotAvailableError,  # 55P03
    DatabaseError,  # ours: a pool that could not connect, or is not connected
)

#: The first pause before a step is tried again; each pause doubles.
FIRST_BACKOFF_S = 0.2
#: Longest pause of a background retry (a completion, a LISTEN made again).
MAX_BACKOFF_S = 10.0
#: Longest pause of a wait someone is waiting on: short, since a whole queue of sessions
#: may wait behind the database and should go on once it is back.
MAX_PAUSE_S = 2.0


async def through_outage(
    attempt: Callable[[], Awaitable[T]],
    outage_limit_s: float,
    waiting: Callable[[BaseException], None] | None = None,
) -> T:
    """``attempt()``'s result, trying again while the database is unreachable.

    ``waiting`` is told of each failed attempt that will be retried; after
    ``outage_limit_s`` seconds the last error is raised as it came. Anything other
    than "unreachable right now" is raised at once.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + outage_limit_s
    pause = FIRST_BACKOFF_S
    while True:
        try:
            return await attempt()
        except UNREACHABLE as exc:
            left = deadline - loop.time()
            if left <= 0:
                raise
            if waiting is not None:
                waiting(exc)
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, MAX_PAUSE_S)
