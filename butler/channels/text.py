"""Replies as a channel can carry them: labelled, cut to one line, split to its limit."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

#: The longest one-line notice (a failure, a refusal) a chat gets.
MAX_LINE = 300


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """``text`` on one line, without control characters, at most ``limit`` characters."""
    flat = " ".join(clean(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def clean(text: str) -> str:
    """``text`` without control characters other than newlines and tabs."""
    return "".join(
        c for c in text if c in "\n\t" or unicodedata.category(c) not in ("Cc", "Cf", "Cs")
    )


def display_name(name: str | None) -> str | None:
    """A sender's chosen name, bounded and on one line: it is their text, not ours."""
    if not name:
        return None
    return one_line(name, 64) or None


def labelled(butler: str, text: str) -> str:
    """A reply prefixed with the butler that answered it."""
    return f"[{butler}] {text}"


def utf16_units(text: str) -> int:
    """The length Telegram counts: UTF-16 code units (an emoji is two)."""
    return len(text.encode("utf-16-le")) // 2


def split(text: str, limit: int, size: Callable[[str], int] = len) -> list[str]:
    """``text`` in pieces of at most ``limit`` (as ``size`` measures), cut at paragraphs,
    lines or words.

    Nothing is dropped: a word longer than ``limit`` is cut where it must be.
    """
    if limit < 2:
        raise ValueError("limit must be at least 2")
    pieces: list[str] = []
    rest = text.strip()
    while size(rest) > limit:
        cut = _cut(rest, _fit(rest, limit, size))
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest or not pieces:
        pieces.append(rest)
    return pieces


def _fit(text: str, limit: int, size: Callable[[str], int]) -> int:
    """The most characters of ``text`` whose size is within ``limit`` (at least one)."""
    low, high = 1, min(len(text), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if size(text[:middle]) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


def _cut(text: str, fit: int) -> int:
    """Where to end a piece of at most ``fit`` characters: the latest natural break."""
    window = text[: fit + 1]
    for pattern in (r"\n\s*\n", r"\n", r"(?<=[.!?])\s", r"\s"):
        breaks = [m.start() for m in re.finditer(pattern, window) if 0 < m.start() <= fit]
        if breaks and breaks[-1] > fit // 4:
            return breaks[-1]
    return fit
