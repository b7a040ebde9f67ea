"""Which database errors mean "not now" rather than "never".

A write the database cannot take during an outage is retried or waited out
(a session's completion, a worker's result, a wait for one); a write it
refuses for what it holds is not, since no retry can change it. The line
between them is drawn here, once, for every part that retries: drawn too
narrowly, a failover or a burst of connections was taken for a refusal and
a finished session's outcome was dropped.
"""

from __future__ import annotations

import asyncpg

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
)
