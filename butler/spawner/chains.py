"""Chains: sessions started by sessions count back to their root trigger, and are bounded.

A session may start another (``trigger``, ``session_start``, a schedule, a
headless builder), which may start another, and so on: with a real model a
chain would spend without limit and outlive every ``timeout_s``. So each
session started by a session records its chain's root and its depth, and
``[butler.runtime] max_chain_depth`` bounds how deep a chain goes and
``max_chain_sessions`` how many sessions one root trigger may bring about in
all. A refusal is one line naming the setting, given to the asking session
and recorded on its row (``metadata.chain_refused``).

The count is read from the rows, and children admitted but not yet written
are counted here, under one lock, so simultaneous requests of one chain
cannot all pass on the same count.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass

from butler.config import ButlerConfig
from butler.errors import Rejected
from butler.store.chains import chain_of, chain_size
from butler.store.sessions import SessionStore
from butler.store.tenants import sender_key_of_root

#: The metadata key of the asking session's row that holds its last refusal.
REFUSED_KEY = "chain_refused"


@dataclass(frozen=True)
class ChainPlace:
    """Where a new session stands: its chain's root trigger and its distance from it."""

    root_id: uuid.UUID | None = None
    depth: int = 0
    #: Whose the chain is (:func:`~butler.store.tenants.sender_key` of its root): a
    #: session a sender's session asks for is that sender's too. None: the owner's.
    tenant: str | None = None


ROOT = ChainPlace()


class Chains:
    """Admits sessions that sessions ask for, within the chain bounds of one butler."""

    def __init__(self, config: ButlerConfig, sessions: SessionStore) -> None:
        self.config = config
        self.sessions = sessions
        self._lock = asyncio.Lock()
        #: Per root, children admitted whose rows are not written yet.
        self._admitting: Counter[uuid.UUID] = Counter()

    @contextlib.asynccontextmanager
    async def admit(self, caller_id: str | None) -> AsyncIterator[ChainPlace]:
        """The place of a session asked for by ``caller_id`` (a root when None).

        Raises :class:`Rejected` past a bound, recorded on the caller's row. The
        child is counted until the block ends: write its row inside it.
        """
        if caller_id is None:
            yield ROOT
            return
        async with self._lock:
            root, depth = await self._place(uuid.UUID(caller_id))
            self._admitting[root] += 1
        try:
            yield ChainPlace(root, depth, await sender_key_of_root(self.sessions.db, root))
        finally:
            self._admitting[root] -= 1
            if self._admitting[root] <= 0:
                del self._admitting[root]

    async def _place(self, caller: uuid.UUID) -> tuple[uuid.UUID, int]:
        """The root and depth of a child of ``caller``, or :class:`Rejected`."""
        found = await chain_of(self.sessions.db, caller)
        root, depth = found if found else (caller, 0)
        runtime, where = self.config.runtime, self.config.config_dir / "butler.toml"
        if depth + 1 > runtime.max_chain_depth:
            await self._refuse(
                caller,
                f"chain too deep: this session is {depth} sessions from its root trigger "
                f"{root}, and [butler.runtime] max_chain_depth = {runtime.max_chain_depth} "
                f"in {where} lets it start none",
            )
        size = await chain_size(self.sessions.db, root) + self._admitting[root]
        if size >= runtime.max_chain_sessions:
            await self._refuse(
                caller,
                f"chain too long: {size} sessions descend from root trigger {root}, and "
                f"[butler.runtime] max_chain_sessions = {runtime.max_chain_sessions} in "
                f"{where} allows no more",
            )
        return root, depth + 1

    async def _refuse(self, caller: uuid.UUID, reason: str) -> None:
        await self.sessions.update_metadata(caller, {REFUSED_KEY: reason})
        raise Rejected(reason)
