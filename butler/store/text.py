"""Text and JSON the database can always hold: the one sanitising step of the store.

PostgreSQL refuses a NUL character in ``text`` and ``jsonb``, and asyncpg
cannot encode a lone surrogate (what invalid UTF-8 becomes once decoded with
``surrogateescape``, or what JSON's ``"\\ud800"`` decodes to). A runtime that
prints either must still get its session recorded, so every text and JSON
value on its way into a row passes through :func:`clean_text` or
:func:`clean_json`: such characters become U+FFFD, non-finite numbers become
null, and the caller is told which fields were touched so the row can say so
(``metadata.sanitised``). Size caps cut a field with a visible marker
(``metadata.truncated``) instead of letting one runaway session fill the disk.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

#: Default cap on one stored text field (``[butler] max_output_bytes``).
DEFAULT_MAX_TEXT_BYTES = 1024 * 1024
#: Deepest JSON nesting stored; deeper values are cut (the tool boundary refuses them first).
MAX_JSON_DEPTH = 64
REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def truncation_marker(dropped: int, limit: int) -> str:
    """The line appended to a cut field, so a reader knows it is not the whole text."""
    return f"\n[butler: {dropped} bytes cut at the {limit}-byte limit]"


#: Bytes of a capped field left for its marker, so field and marker fit the cap together.
MARKER_RESERVE = 100


def cap_text(text: str, max_bytes: int, dropped: int = 0) -> tuple[str, bool]:
    """``text`` cut so that it and its marker fit in ``max_bytes``; whether it was cut.

    ``dropped`` counts bytes that already went missing before ``text`` got here
    (a reader that stopped keeping them), so the marker tells the whole loss.
    """
    encoded = text.encode("utf-8", "surrogatepass")
    total = len(encoded) + dropped
    if total <= max_bytes:
        return text, False
    keep = max(max_bytes - MARKER_RESERVE, 0)
    kept = encoded[:keep].decode("utf-8", "ignore")
    return kept + truncation_marker(total - keep, max_bytes), True


def clean_text(text: str) -> tuple[str, bool]:
    """``text`` with NUL and lone surrogates replaced by U+FFFD; whether any were."""
    cleaned, count = _UNSTORABLE.subn(REPLACEMENT, text)
    return cleaned, count > 0


def _clean(value: Any, depth: int, changed: list[bool]) -> Any:
    if isinstance(value, str):
        text, dirty = clean_text(value)
        changed[0] |= dirty
        return text
    if isinstance(value, float) and not math.isfinite(value):
        changed[0] = True
        return None
    if isinstance(value, dict | list | tuple) and depth >= MAX_JSON_DEPTH:
        changed[0] = True
        return "[butler: nesting cut]"
    if isinstance(value, dict):
        return {
            _clean(str(k), depth, changed): _clean(v, depth + 1, changed) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_clean(v, depth + 1, changed) for v in value]
    return value


def clean_json(value: Any) -> tuple[Any, bool]:
    """A JSON value PostgreSQL accepts (strings cleaned, NaN/Infinity null); whether it changed."""
    changed = [False]
    cleaned = _clean(value, 0, changed)
    return cleaned, changed[0]


def json_size(value: Any) -> int:
    """Bytes of ``value`` as the database will store it (roughly: its JSON text)."""
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


@dataclass
class RowText:
    """Values for one row, cleaned and capped, with the names of the fields that were touched."""

    max_bytes: int = DEFAULT_MAX_TEXT_BYTES
    sanitised: list[str] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)

    def text(self, name: str, value: str | None) -> str | None:
        """A text column's value, storable and within the cap."""
        if value is None:
            return None
        cleaned, dirty = clean_text(value)
        if dirty:
            self.sanitised.append(name)
        capped, cut = cap_text(cleaned, self.max_bytes)
        if cut:
            self.truncated.append(name)
        return capped

    def json(self, name: str, value: Any) -> Any:
        """A JSON column's value, storable; a list past the cap keeps its head and says so."""
        cleaned, dirty = clean_json(value)
        if dirty:
            self.sanitised.append(name)
        if json_size(cleaned) <= self.max_bytes:
            return cleaned
        self.truncated.append(name)
        if isinstance(cleaned, list):
            return _head_of(cleaned, self.max_bytes)
        return {"butler_truncated": truncation_marker(json_size(cleaned), self.max_bytes).strip()}

    def flags(self) -> dict[str, list[str]]:
        """What to merge into the row's metadata: only the lists that are not empty."""
        flags = {"sanitised": self.sanitised, "truncated": self.truncated}
        return {key: names for key, names in flags.items() if names}


def _head_of(items: list[Any], max_bytes: int) -> list[Any]:
    kept: list[Any] = []
    size = 2
    for item in items:
        size += json_size(item) + 1
        if size > max_bytes:
            break
        kept.append(item)
    kept.append({"butler_truncated": f"{len(items) - len(kept)} more entries past the limit"})
    return kept


def abbreviate(value: Any, limit: int = 60) -> str:
    """``repr(value)`` short enough for a one-line error message."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 20]}...{text[-12:]} ({len(text)} chars)"


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, counting no further than ``limit + 1``."""
    if not isinstance(value, dict | list) or limit < 0:
        return 0
    children = value.values() if isinstance(value, dict) else value
    return 1 + max((_depth(child, limit - 1) for child in children), default=0)


def json_problem(value: Any, max_depth: int, max_bytes: int) -> str | None:
    """Why ``value`` cannot be stored as given (NUL, NaN, too deep, too big), or None."""
    if _depth(value, max_depth) > max_depth:
        return f"is nested deeper than {max_depth} levels"
    cleaned, changed = clean_json(value)
    if changed:
        return "holds a NUL character, invalid UTF-8 or a non-finite number (NaN, Infinity)"
    size = json_size(cleaned)
    if size > max_bytes:
        return f"is {size} bytes as JSON, over the {max_bytes}-byte limit"
    return None
