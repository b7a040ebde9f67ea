"""The butler's memory on a worker: what each job carried, recalled by its daemon.

A worker reads no episode itself: its own database role may not (docs/security.md),
and the daemon, which holds the rows, recalls the session's memory as it queues
the job (:class:`butler.spawner.remote.Job`). The session's run asks for it as a
local run asks its store (:func:`butler.spawner.episodes.memory_context`); the
daemon stores the new episode when it records the session, as for a local one.
"""

from __future__ import annotations

import uuid


class CarriedMemory:
    """A :class:`butler.store.memory.Memory` answering each picked session with what its
    job carried."""

    def __init__(self) -> None:
        self._blocks: dict[str, str] = {}

    def carry(self, session_id: str, block: str | None) -> None:
        """``block`` is the session's memory (its job carried it) until :meth:`drop`."""
        if block is not None:
            self._blocks[session_id] = block

    def drop(self, session_id: str) -> None:
        self._blocks.pop(session_id, None)

    async def fetch_memory_context(
        self, session_id: uuid.UUID | str | None = None, scope: str = "butler"
    ) -> str | None:
        return self._blocks.get(str(session_id)) if session_id is not None else None

    async def store_session_episode(self, session_id: uuid.UUID, prompt: str, output: str) -> None:
        """Nothing: the daemon stores the episode when it records the session."""
