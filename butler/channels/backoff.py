"""Waits between attempts to reach a channel's server: doubling, capped, a little random."""

from __future__ import annotations

import random

FIRST_S = 0.5
MAX_S = 60.0


class Backoff:
    """0.5 s, 1 s, 2 s ... up to a minute, each stretched by up to a fifth at random."""

    def __init__(self, first_s: float = FIRST_S, max_s: float = MAX_S) -> None:
        self.first_s = first_s
        self.max_s = max_s
        self._next = first_s

    def peek(self) -> float:
        """The next wait, without its random part."""
        return self._next

    def next(self) -> float:
        """The wait before the next attempt; each failure doubles it."""
        wait = self._next
        self._next = min(self._next * 2, self.max_s)
        # Spread retries, so many channels (or butlers) coming back do not all knock at once.
        return wait * (1 + random.random() / 5)

    def reset(self) -> None:
        """The server answered: the next failure starts from the first wait again."""
        self._next = self.first_s
