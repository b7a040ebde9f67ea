"""What is sent: a message's body, title, priority and attachment, and their bounds.

A message is data a session wrote. It reaches Apprise only as the body,
title and attachment of a notification, as plain text (never markdown or
HTML to render, never a URL to parse), and within the owner's bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Priority = Literal["high", "normal", "low"]
#: ``failure``: a schedule's session failed (services that show a type show an error).
Kind = Literal["info", "failure"]
#: Longest title sent: one line.
MAX_TITLE_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")


@dataclass(frozen=True)
class Attachment:
    """A file sent with a message: a name and its bytes (the daemon's copy, never a path)."""

    name: str
    content: bytes = b""

    def __repr__(self) -> str:
        return f"Attachment({self.name!r}, {len(self.content)} bytes)"


@dataclass(frozen=True)
class Message:
    """One notification as the person will read it."""

    body: str
    title: str
    priority: Priority = "normal"
    kind: Kind = "info"
    attachment: Attachment | None = None


def one_line(title: str | None, default: str) -> str:
    """``title`` as one line of at most :data:`MAX_TITLE_CHARS`, or ``default`` when blank.

    A line break in an e-mail subject would start a header of its own.
    """
    text = " ".join(_CONTROL.sub(" ", title or "").split())
    if not text:
        return default
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1] + "…"


def session_link(public_url: str | None, session_id: str | None) -> str | None:
    """The session's dashboard page as the owner reaches it from elsewhere, if known."""
    if not public_url or not session_id:
        return None
    return f"{public_url}/sessions/{session_id}"


def bounded(body: str, max_chars: int, link: str | None, session_id: str | None) -> str:
    """``body`` without NUL, at most ``max_chars`` long; a longer one is cut and says
    where the whole of it is."""
    body = body.replace("\x00", "\ufffd")
    if len(body) <= max_chars:
        return body
    if link:
        where = f"the whole answer: {link}"
    elif session_id:
        where = f"the whole answer is on the dashboard, session {session_id}"
    else:
        where = "the rest was not sent"

    def note(dropped: int) -> str:
        return f"\n\n… (cut: {dropped:,} more characters; {where})"

    keep = max(max_chars - len(note(len(body))), 0)
    return body[:keep].rstrip() + note(len(body) - keep)
