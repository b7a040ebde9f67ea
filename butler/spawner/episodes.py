"""A butler's memory around a session: past episodes into its prompt, this one kept after.

Memory is a help, never a condition: a store that is down costs the session
its context (one warning line), not its run.
"""

from __future__ import annotations

import logging
import uuid

from butler.config import ButlerConfig
from butler.store.memory import Memory

log = logging.getLogger(__name__)


async def memory_context(
    config: ButlerConfig, memory: Memory | None, session_id: str
) -> str | None:
    """What the butler remembers, for ``session_id``'s system prompt; None without memory.

    A session a chat's sender started is reminded of its own conversation's episodes
    only (``[butler.channels] sender_scope``), never another person's.
    """
    if memory is None or not config.butler.memory.enabled:
        return None
    try:
        scope = config.butler.channels.sender_scope
        return await memory.fetch_memory_context(session_id, scope)
    except Exception as exc:
        log.warning("memory context unavailable, going on without it: %s", exc)
        return None


async def remember(
    config: ButlerConfig, memory: Memory | None, session_id: uuid.UUID, prompt: str, output: str
) -> None:
    """Keep a succeeded session as an episode, when the butler keeps memory."""
    if memory is None or not config.butler.memory.enabled:
        return
    try:
        await memory.store_session_episode(session_id, prompt, output)
    except Exception as exc:
        log.warning("could not store the session episode: %s", exc)
