"""Opening a roster's databases and assembling its butlers, a few at a time.

What a hundred butlers cost the database server: every schema's lock (the
hold that keeps a second daemon off it) on one connection per server, not
one each; and, past :data:`WARM_UP_TO` butlers, pools that keep no
connection for their own sake and open at most
:data:`~butler.store.budget.ROSTER_CONNECTIONS` together
(:mod:`butler.store.budget`), where a small roster keeps one warm per
butler. A server's ``max_connections`` is 100 by default: two connections a
butler did not let a hundred start at all.

Every schema is held before any butler is assembled (assembling recovers
from an earlier crash, which must not happen while another daemon serves):
a roster that cannot hold them all touches none.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from butler.config import ButlerConfig
from butler.context import ButlerContext
from butler.daemon import assemble
from butler.logs import current_butler
from butler.store.budget import Budget
from butler.store.install import Leases
from butler.store.opening import OpenDatabase, open_store

#: A roster of at most this many butlers keeps a connection open per butler (its first
#: query pays no connect); a larger one opens them at first use.
WARM_UP_TO = 10
#: Butlers opened (or assembled) at once: their round trips to the server overlap,
#: and at most this many of a large roster's connections are open during its start.
AT_ONCE = 4

T = TypeVar("T")


@dataclass
class Opened:
    """A roster's open databases, in the order of its butlers, and its holds on them."""

    databases: list[OpenDatabase] = field(default_factory=list)
    leases: list[Leases] = field(default_factory=list)

    async def close(self) -> None:
        for database in self.databases:
            await database.close()
        for lease in self.leases:
            await lease.release()


async def open_all(configs: Sequence[ButlerConfig], shared: str | None) -> Opened:
    """Every butler's database opened and its schema held; nothing left open on an error.

    ``shared``: the URL of butlers that name none (the roster's embedded server).
    """
    leases: dict[str, Leases] = {}
    budgets: dict[str, Budget | None] = {}
    for config in configs:
        url = config.butler.db.url or shared
        assert url is not None, "a butler without a database URL and no shared one"
        if url not in leases:
            leases[url] = Leases(url)
            budgets[url] = Budget() if len(configs) > WARM_UP_TO else None

    async def one(config: ButlerConfig) -> OpenDatabase:
        url = config.butler.db.url or shared
        assert url is not None
        return await open_store(config.essentials(), url, leases=leases[url], budget=budgets[url])

    results = await _each(configs, one)
    opened = Opened([r for r in results if isinstance(r, OpenDatabase)], list(leases.values()))
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        await opened.close()
        raise failed[0]
    return opened


async def assemble_all(
    configs: Sequence[ButlerConfig], opened: Sequence[OpenDatabase]
) -> list[ButlerContext]:
    """Every butler assembled over its open database, in the order of ``configs``."""
    by_name = {c.name: o for c, o in zip(configs, opened, strict=True)}

    async def one(config: ButlerConfig) -> ButlerContext:
        return await assemble(config, by_name[config.name].db)

    results = await _each(configs, one)
    failed = [r for r in results if isinstance(r, BaseException)]
    if failed:
        raise failed[0]
    return [r for r in results if isinstance(r, ButlerContext)]


async def _each(
    configs: Sequence[ButlerConfig], step: Callable[[ButlerConfig], Awaitable[T]]
) -> list[T | BaseException]:
    """``step`` of every butler, :data:`AT_ONCE` at a time, each logging under its name;
    its result or its error, in the order of ``configs`` (the first error is the one said)."""
    gate = asyncio.Semaphore(AT_ONCE)

    async def guarded(config: ButlerConfig) -> T:
        async with gate:
            current_butler.set(config.name)  # this task's own context
            return await step(config)

    return await asyncio.gather(*(guarded(c) for c in configs), return_exceptions=True)
