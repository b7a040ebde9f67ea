"""System prompt composition: ``CLAUDE.md``, its includes and the shared snippets.

``<!-- @include path/to/file.md -->`` is replaced by that file, resolved
relative to the roster folder (includes may nest). A path that leaves the
roster, a missing file or an include cycle is a :class:`ConfigError` naming
the file that holds the directive.
"""

from __future__ import annotations

import re
from pathlib import Path

from butler.errors import ConfigError

INCLUDE = re.compile(r"<!--\s*@include\s+(\S+?)\s*-->")
#: Snippets of ``roster/shared/`` appended to every butler's prompt when present.
SHARED_SNIPPETS = ("BUTLER_SKILLS.md", "MCP_LOGGING.md")


def _resolve(directive: str, roster: Path, holder: Path) -> Path:
    target = (roster / directive).resolve()
    if not target.is_relative_to(roster):
        raise ConfigError(
            f"{holder}: include {directive!r} leaves the roster folder {roster}; "
            "expected a path inside it"
        )
    if not target.is_file():
        raise ConfigError(f"{holder}: include {directive!r} not found at {target}")
    return target


def expand_includes(path: Path, roster: Path, _stack: tuple[Path, ...] = ()) -> str:
    """The text of ``path`` with every include directive replaced, recursively."""
    roster = roster.resolve()
    path = path.resolve()
    if path in _stack:
        chain = " -> ".join(p.name for p in (*_stack, path))
        raise ConfigError(f"{_stack[-1]}: include cycle {chain}; expected includes to form a tree")
    text = path.read_text(encoding="utf-8")

    def replace(match: re.Match[str]) -> str:
        target = _resolve(match.group(1), roster, path)
        return expand_includes(target, roster, (*_stack, path)).rstrip("\n")

    return INCLUDE.sub(replace, text)


def compose_system_prompt(prompt_file: Path, roster: Path, memory: str | None = None) -> str:
    """The butler's whole system prompt: its file, shared snippets, then memory."""
    parts = [expand_includes(prompt_file, roster).strip()]
    for name in SHARED_SNIPPETS:
        snippet = roster / "shared" / name
        if snippet.is_file():
            parts.append(expand_includes(snippet, roster).strip())
    if memory:
        parts.append(memory.strip())
    return "\n\n".join(p for p in parts if p) + "\n"
