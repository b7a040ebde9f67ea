"""Reading a JSON object from a file a person wrote, with one clear line when it is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json_object(
    path: Path, what: str, error: type[Exception], *, missing_ok: bool = True
) -> dict[str, Any]:
    """The JSON object in ``path`` (``{}`` for a missing or empty file when ``missing_ok``).

    ``what`` names what the file should hold ("a state object"); anything
    else raises ``error`` with the file, the line and column, and that.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise error(f"{path}: not found; expected {what}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read it: {exc}") from None
    return json_object(text, path, what, error)


def json_object(text: str, path: Path, what: str, error: type[Exception]) -> dict[str, Any]:
    """The JSON object ``text`` read from ``path`` (``{}`` when blank); else ``error``."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); "
            f"expected {what}"
        ) from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected {what}, found a JSON {type(data).__name__}")
    return data
