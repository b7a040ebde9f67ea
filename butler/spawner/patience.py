"""Waiting out a database outage, bounded: what an admitted session does when the database
goes away before its runtime starts.

A session the butler accepted is not thrown away by a blip: marking it running
and reading its credentials are retried with backoff while the database is
unreachable, each for at most the session's own time limit (the caller's
``patience``; the two waits are separate, so a session could wait through two
outages of nearly that long before its runtime starts). Anything other than
"unreachable right now" fails at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from butler.spawner.completions import FIRST_BACKOFF_S, TRANSIENT

T = TypeVar("T")

#: Longest pause between two attempts: short, since a whole queue of sessions may wait
#: behind the database and should start once it is back.
MAX_PAUSE_S = 2.0


async def through_outage(
    attempt: Callable[[], Awaitable[T]],
    patience: float,
    waiting: Callable[[BaseException], None] | None = None,
) -> T:
    """``attempt()``'s result, trying again while the database is unreachable.

    ``waiting`` is told of each failed attempt that will be retried; after
    ``patience`` seconds the last error is raised as it came.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    pause = FIRST_BACKOFF_S
    while True:
        try:
            return await attempt()
        except TRANSIENT as exc:
            left = deadline - loop.time()
            if left <= 0:
                raise
            if waiting is not None:
                waiting(exc)
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, MAX_PAUSE_S)
