"""How a headless session's end is recorded, whichever path ran it.

A session whose runtime ran in the daemon, one a worker ran, and one a
restarted daemon took back from the workers (:mod:`.handed_over`) all end
through :meth:`Closing.ended`: what ended their steps becomes a status and an
error once (:class:`~butler.spawner.result.Ending`), the share of the usage a
resumed conversation added goes on the row (:mod:`.usage`), its raw totals
with it in the same statement, the row is completed through the lifecycle
(journalled, its tool calls merged with what the server saw, counted), a
succeeded session is kept as an episode of the butler's memory, and the
caller gets its :class:`SpawnerResult`. One function, so no path records an
ending its own way.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from butler.spawner.episodes import remember
from butler.spawner.lifecycle import SessionLifecycle
from butler.spawner.result import Ending, SpawnerResult, spawner_result
from butler.spawner.usage import own_share, totals
from butler.store.memory import Memory

#: A session's steps: run it, setting ``end.result`` (and ``end.started`` once its
#: runtime starts); return the row of the session it resumed, if any.
Steps = Callable[[Ending], Awaitable[Mapping[str, Any] | None]]


class Closing:
    """Records how each headless session of one butler ended."""

    def __init__(
        self, lifecycle: SessionLifecycle, memory: Memory | None, cumulative: frozenset[str]
    ) -> None:
        self.lifecycle = lifecycle
        self.config = lifecycle.config
        self.memory = memory
        #: What the runtime reports as a resumed conversation's totals (usage.py).
        self.cumulative = cumulative

    async def ended(
        self, session_id: str, prompt: str, steps: Steps, started: float | None = None
    ) -> SpawnerResult:
        """Run ``steps`` and record how the session ended, whatever ended them; only a
        cancellation goes on to the caller, once the row is written.

        ``started`` (monotonic) is when the session's time began, if before now (a
        session taken back after a restart); ``steps`` moves it to when its runtime
        started, which the row's duration counts from.
        """
        end = Ending(started=time.monotonic() if started is None else started)
        kept = None  # the raw totals, written with the outcome: one statement, not two
        try:
            with end.caught(self.config, session_id):
                resumed = await steps(end)
                if self.cumulative:
                    kept = totals(end.result, self.cumulative)
                end.result = own_share(end.result, self.cumulative, resumed)
        finally:
            outcome = await self.lifecycle.complete(
                session_id, replace(end.outcome(), totals=kept), end.result.tool_calls
            )
        if outcome.success:
            await remember(self.config, self.memory, uuid.UUID(session_id), prompt, outcome.output)
        return spawner_result(session_id, outcome)
