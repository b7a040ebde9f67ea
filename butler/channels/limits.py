"""How often a sender is heard, and how often a notice is said to them.

Both live in memory, bounded: a stranger who writes from ten thousand
addresses costs at most :data:`MAX_KEYS` entries, the oldest forgotten first.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable

MAX_KEYS = 10_000
#: An unknown sender hears "not paired" at most this often.
REFUSAL_EVERY_S = 3600.0
#: A paired sender over the rate hears "slow down" at most this often.
SLOW_DOWN_EVERY_S = 60.0


class _Bounded(OrderedDict[str, object]):
    def touch(self, key: str) -> None:
        self.move_to_end(key)
        while len(self) > MAX_KEYS:
            self.popitem(last=False)


class RateLimit:
    """At most ``per_minute`` messages of one sender in any sixty seconds."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._seen = _Bounded()

    def allow(self, sender: str) -> bool:
        """Count a message of ``sender``; whether it is within the rate."""
        return self.wait(sender) == 0.0

    def wait(self, sender: str) -> float:
        """Seconds until a message of ``sender`` is within the rate; 0 counts it now."""
        now = self.clock()
        times = self._seen.get(sender)
        if not isinstance(times, deque):
            times = deque()
            self._seen[sender] = times
        self._seen.touch(sender)
        while times and times[0] <= now - 60:
            times.popleft()
        if len(times) >= self.per_minute:
            return max(times[0] + 60 - now, 0.001)
        times.append(now)
        return 0.0


class Notices:
    """Say a notice to the same key at most once per ``every_s`` seconds."""

    def __init__(self, every_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self.clock = clock
        self._said = _Bounded()

    def due(self, key: str) -> bool:
        """Whether the notice may be said to ``key`` now (and count it said)."""
        now = self.clock()
        last = self._said.get(key)
        if isinstance(last, float) and now - last < self.every_s:
            return False
        self._said[key] = now
        self._said.touch(key)
        return True
