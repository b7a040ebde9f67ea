"""Where a channel pushed to over a WebSocket reads back from after a gap.

Slack's Socket Mode and Discord's Gateway deliver what happens now; what
was said while the daemon was away is only in each chat's history. The
cursor is the last message recorded in each chat talked in lately, stored
by the service after the messages are recorded; at the next connection the
channel reads each chat's history after it. A message read twice is
recorded once (its id), so reading back too much costs nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

#: Chats whose last recorded message the cursor keeps, the most recent first.
CHATS = 50
#: Messages read back per chat at most.
READ_BACK = 100


class Seen:
    """The last message id recorded in each recent chat, as stored between runs."""

    def __init__(
        self,
        position: str | None,
        chat: re.Pattern[str],
        message: re.Pattern[str],
        order: Callable[[str], Any],
    ) -> None:
        """``chat`` and ``message`` say what an id looks like; ``order`` sorts message ids."""
        self._order = order
        self._last: dict[str, str] = {}
        try:
            found = json.loads(position or "{}")
        except ValueError:
            found = {}
        for key, value in found.items() if isinstance(found, dict) else []:
            if chat.fullmatch(str(key)) and message.fullmatch(str(value)):
                self._last[str(key)] = str(value)
        while len(self._last) > CHATS:
            del self._last[next(iter(self._last))]

    def __bool__(self) -> bool:
        return bool(self._last)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(list(self._last.items()))

    def saw(self, chat: str, message: str) -> None:
        """``message`` of ``chat`` is recorded: read back after it, and keep the chat."""
        before = self._last.pop(chat, None)
        later = before is None or self._order(message) > self._order(before)
        self._last[chat] = message if later else before  # type: ignore[assignment]
        while len(self._last) > CHATS:
            del self._last[next(iter(self._last))]

    def position(self) -> str:
        """What the service stores."""
        return json.dumps(self._last)
