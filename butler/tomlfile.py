"""Reading a TOML file a person wrote, with one clear line when it is wrong."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from butler.errors import ConfigError


def read_toml(path: Path) -> dict[str, Any]:
    """The table in ``path``; an unreadable file or invalid TOML is a :class:`ConfigError`.

    The message names the file, then the line and column, then tomllib's reason.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: expected a UTF-8 text file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML {_position(str(exc), text)}") from None


def _position(message: str, text: str) -> str:
    """tomllib's message rewritten to lead with the line and column."""
    match = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", message)
    if match:
        return f"at line {match[2]}, column {match[3]}: {match[1]}"
    reason = message.removesuffix(" (at end of document)")
    lines = text.split("\n")
    return f"at line {len(lines)}, column {len(lines[-1]) + 1} (end of file): {reason}"
