"""Test doubles for code built on butler.

:class:`MockSpawner` stands in for the real spawner in a butler's own tests: it
records every trigger, answers with canned results matched by prompt
substring, and offers assertion helpers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from butler.runtimes.base import ProgressSink
from butler.spawner.result import SpawnerResult
from butler.spawner.spawner import TriggerRequest


@dataclass(frozen=True)
class Invocation:
    """One recorded trigger."""

    prompt: str
    context: str | None = None
    trigger_source: str = "external"


class MockSpawner:
    """Records triggers and returns canned :class:`SpawnerResult` values."""

    def __init__(self) -> None:
        self.invocations: list[Invocation] = []
        self._responses: list[tuple[str, SpawnerResult]] = []

    def add_response(self, substring: str, result: SpawnerResult) -> None:
        """Answer prompts containing ``substring`` with ``result`` (first match wins)."""
        self._responses.append((substring, result))

    async def trigger(
        self, request: TriggerRequest, progress: ProgressSink | None = None
    ) -> SpawnerResult:
        """Record ``request`` and answer it, as :meth:`Spawner.trigger` would."""
        self.invocations.append(Invocation(request.prompt, request.context, request.trigger_source))
        for substring, result in self._responses:
            if substring in request.prompt:
                return copy.deepcopy(result)
        return SpawnerResult(success=True, output="", tool_calls=[], error=None)

    def assert_triggered(self, times: int) -> None:
        """Fail unless exactly ``times`` triggers were recorded."""
        count = len(self.invocations)
        if count != times:
            raise AssertionError(f"expected {times} triggers, got {count}")

    def assert_prompted_with(self, substring: str) -> None:
        """Fail unless some recorded prompt contains ``substring``."""
        if not any(substring in inv.prompt for inv in self.invocations):
            prompts = [inv.prompt for inv in self.invocations]
            raise AssertionError(f"no prompt contains {substring!r}; prompts were {prompts!r}")
