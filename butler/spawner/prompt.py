"""System prompt composition: ``CLAUDE.md``, its includes and the shared snippets.

``<!-- @include path/to/file.md -->`` is replaced by that file, resolved
relative to the roster folder (includes may nest). A path that leaves the
roster, a missing file, a file that is not UTF-8, an include cycle, nesting
deeper than :data:`MAX_INCLUDE_DEPTH` or a prompt larger than
``max_prompt_bytes`` is a :class:`ConfigError` in one line naming the file
that holds the directive.

Each file is expanded once per composition (a file included a thousand times
costs one expansion) and read once per modification (cached by mtime), and
expansion stops as soon as the text passes the size limit, so an include
bomb is refused in milliseconds. :func:`compose_system_prompt_async` runs the
whole composition in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path

from butler.errors import ConfigError

INCLUDE = re.compile(r"<!--\s*@include\s+(\S+?)\s*-->")
#: Snippets of ``roster/shared/`` appended to every butler's prompt when present.
SHARED_SNIPPETS = ("BUTLER_SKILLS.md", "MCP_LOGGING.md")
#: Deepest include nesting (a chain of includes) accepted.
MAX_INCLUDE_DEPTH = 32
#: Default size limit of a composed prompt (``[butler] max_prompt_bytes``).
DEFAULT_MAX_PROMPT_BYTES = 1024 * 1024

_cache: dict[Path, tuple[int, int, str]] = {}
_cache_lock = threading.Lock()


def _read(path: Path, holder: Path | None) -> str:
    """The text of ``path``, from the cache while its mtime and size are unchanged."""
    where = f"{holder}: include {path}" if holder else str(path)
    try:
        stat = path.stat()
        with _cache_lock:
            cached = _cache.get(path)
        if cached and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            return cached[2]
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{where}: expected UTF-8 text, found byte 0x{data[exc.start]:02x} "
            f"at offset {exc.start}"
        ) from None
    with _cache_lock:
        _cache[path] = (stat.st_mtime_ns, stat.st_size, text)
    return text


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


class _Expansion:
    """One composition: files expanded so far, the limits, the include chain."""

    def __init__(self, roster: Path, max_bytes: int) -> None:
        self.roster = roster.resolve()
        self.max_bytes = max_bytes
        self.done: dict[Path, str] = {}

    def expand(self, path: Path, stack: tuple[Path, ...]) -> str:
        if path in self.done:
            return self.done[path]
        if path in stack:
            chain = " -> ".join(p.name for p in (*stack, path))
            raise ConfigError(
                f"{stack[-1]}: include cycle {chain}; expected includes to form a tree"
            )
        if len(stack) >= MAX_INCLUDE_DEPTH:
            raise ConfigError(
                f"{stack[-1]}: include of {path.name} nested {len(stack) + 1} deep; "
                f"expected includes nested at most {MAX_INCLUDE_DEPTH} deep"
            )
        text = _read(path, stack[-1] if stack else None)
        parts: list[str] = []
        size = 0
        last = 0
        for match in INCLUDE.finditer(text):
            target = _resolve(match.group(1), self.roster, path)
            inner = self.expand(target, (*stack, path)).rstrip("\n")
            parts += [text[last : match.start()], inner]
            last = match.end()
            size += len(parts[-2]) + len(inner)
            if size > self.max_bytes:  # characters never outnumber bytes
                self.too_big(path)
        parts.append(text[last:])
        expanded = "".join(parts)
        if len(expanded.encode("utf-8", "surrogatepass")) > self.max_bytes:
            self.too_big(path)
        self.done[path] = expanded
        return expanded

    def too_big(self, path: Path) -> None:
        raise ConfigError(
            f"{path}: expands past {self.max_bytes} bytes with its includes; expected a "
            f"system prompt within [butler] max_prompt_bytes = {self.max_bytes}"
        )


def expand_includes(path: Path, roster: Path, max_bytes: int = DEFAULT_MAX_PROMPT_BYTES) -> str:
    """The text of ``path`` with every include directive replaced, recursively."""
    return _Expansion(roster, max_bytes).expand(path.resolve(), ())


def compose_system_prompt(
    prompt_file: Path,
    roster: Path,
    memory: str | None = None,
    max_bytes: int = DEFAULT_MAX_PROMPT_BYTES,
) -> str:
    """The butler's whole system prompt: its file, shared snippets, then memory.

    Blocking (it reads files); from async code use :func:`compose_system_prompt_async`.
    """
    expansion = _Expansion(roster, max_bytes)
    parts = [expansion.expand(prompt_file.resolve(), ()).strip()]
    for name in SHARED_SNIPPETS:
        snippet = roster / "shared" / name
        if snippet.is_file():
            parts.append(expansion.expand(snippet.resolve(), ()).strip())
    if memory:
        parts.append(memory.strip())
    return "\n\n".join(p for p in parts if p) + "\n"


async def compose_system_prompt_async(
    prompt_file: Path,
    roster: Path,
    memory: str | None = None,
    max_bytes: int = DEFAULT_MAX_PROMPT_BYTES,
) -> str:
    """:func:`compose_system_prompt` in a worker thread, so the event loop keeps serving."""
    return await asyncio.to_thread(compose_system_prompt, prompt_file, roster, memory, max_bytes)
