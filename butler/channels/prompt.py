"""What the session of a chat message is told, around the person's own words.

The framing is the daemon's (the context); the message is the prompt, as the
person wrote it. Neither touches the system prompt: the butler's CLAUDE.md
stays what it is, and the session keeps its jail, tools and limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from butler.channels.message import Inbound
from butler.channels.text import display_name

#: Earlier messages given to a runtime that cannot resume its own session, at most.
HISTORY_MESSAGES = 12
HISTORY_CHARS = 8000


def framing(message: Inbound, history: Sequence[dict[str, Any]] = ()) -> str:
    """The context of a chat message's session: who wrote, from where, what came before."""
    who = display_name(message.display_name) or "a paired person"
    lines = [
        f"A message from {who} (sender {message.sender}) arrived through the "
        f"{message.channel} channel. The message is the person's own words. Answer it; "
        "your answer is sent back to them as plain text.",
    ]
    if history:
        lines += ["", "Earlier in this conversation:", *_history(history)]
    return "\n".join(lines)


def _history(history: Sequence[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    budget = HISTORY_CHARS
    for row in reversed(history[-HISTORY_MESSAGES:]):
        who = "person" if row["direction"] == "in" else "you"
        text = " ".join(str(row["body"]).split())[:1000]
        budget -= len(text)
        if budget < 0:
            break
        lines.append(f"{who}: {text}")
    return list(reversed(lines))


def prompt_of(text: str, message: Inbound) -> str:
    """The prompt: the person's text, or a note that they sent only attachments."""
    if text.strip():
        return text
    return f"(The person sent {len(message.attachments)} attachment(s) and no text.)"
