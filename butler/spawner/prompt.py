"""System prompt composition: ``CLAUDE.md``, its includes and the shared snippets.

``<!-- @include path/to/file.md -->`` is replaced by that file, relative to
the roster folder (includes may nest), which must lie in the roster's
``shared/`` or in the butler's own folder: a session writes its ``CLAUDE.md``,
and the daemon reads outside its jail, so an include of another butler's
folder or of the roster's ``.git/config`` (a remote URL with a token) would
hand the session what its jail hides. No component may start with a dot
(``.git``, ``.env``). A path elsewhere, a missing file, a file that is not
UTF-8, an include cycle, nesting deeper than :data:`MAX_INCLUDE_DEPTH` or a
prompt larger than ``max_prompt_bytes`` is a :class:`ConfigError` in one line
naming the file that holds the directive.

A session may write its butler folder, so every file here is read through
:mod:`butler.security.untrusted`: ``CLAUDE.md`` swapped for a link to the
owner token, an include made a FIFO or a link to ``/dev/zero``, or a folder
on the way made a link, is refused in one line and never reaches a session.

Each file is expanded once per composition (a file included a thousand times
costs one expansion) and expansion stops as soon as the text passes the size
limit, so an include bomb is refused in milliseconds. It blocks (it reads
files): the session path runs it in a worker thread.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from butler.errors import ConfigError
from butler.security import untrusted

INCLUDE = re.compile(r"<!--\s*@include\s+(\S+?)\s*-->")
#: Snippets of ``roster/shared/`` appended to every butler's prompt when present.
SHARED_SNIPPETS = ("BUTLER_SKILLS.md", "MCP_LOGGING.md")
#: Deepest include nesting (a chain of includes) accepted.
MAX_INCLUDE_DEPTH = 32
#: Default size limit of a composed prompt (``[butler] max_prompt_bytes``).
DEFAULT_MAX_PROMPT_BYTES = 1024 * 1024


class _Expansion:
    """One composition: files expanded so far, the limits, the include chain."""

    def __init__(self, roster: Path, max_bytes: int, own: Path | None = None) -> None:
        self.roster = Path(os.path.abspath(roster))
        self.max_bytes = max_bytes
        self.done: dict[Path, str] = {}
        #: What an include may name, below the roster: ``shared/`` and the butler's folder.
        self.allowed = ["shared"]
        if own is not None and own.parent == self.roster:
            self.allowed.append(own.name)

    def expand(self, root: Path, relative: str, stack: tuple[Path, ...], what: str = "") -> str:
        """The text of ``root/relative`` with its includes replaced; ``what`` names it in
        errors (the directive that included it)."""
        path = root / relative
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
        text = self.read(root, relative, stack[-1] if stack else None, what)
        parts: list[str] = []
        size = 0
        last = 0
        for match in INCLUDE.finditer(text):
            target = self.target(match.group(1), path)
            inner = self.expand(self.roster, target, (*stack, path), match.group(1))
            inner = inner.rstrip("\n")
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

    def target(self, directive: str, holder: Path) -> str:
        """The include ``directive`` as a path below the roster folder."""
        try:
            names = untrusted.parts(directive)
        except untrusted.FileRefused:
            names = ()
        if not names:
            raise ConfigError(
                f"{holder}: include {directive!r} leaves the roster folder {self.roster}; "
                "expected a path inside it"
            )
        if names[0] not in self.allowed or any(name.startswith(".") for name in names):
            places = " or ".join(f"{name}/" for name in self.allowed)
            raise ConfigError(
                f"{holder}: include {directive!r} refused; expected a file in the roster's "
                f"{places}, with no name starting with a dot"
            )
        return "/".join(names)

    def read(self, root: Path, relative: str, holder: Path | None, what: str) -> str:
        """The UTF-8 text of ``root/relative``: a regular file, no link on its path."""
        path = root / relative
        where = f"{holder}: include {path}" if holder else str(path)
        try:
            data = untrusted.read(root, relative, self.max_bytes + 1, whole=False)
        except FileNotFoundError:
            if holder is not None:
                raise ConfigError(f"{holder}: include {what!r} not found at {path}") from None
            raise ConfigError(f"{where}: cannot read: not found") from None
        except untrusted.FileRefused as exc:
            raise ConfigError(
                f"{where}: refused ({exc}); expected a regular file, with no link on its "
                f"path inside {root}"
            ) from None
        except OSError as exc:
            raise ConfigError(f"{where}: cannot read: {exc.strerror}") from None
        if len(data) > self.max_bytes:
            self.too_big(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{where}: expected UTF-8 text, found byte 0x{data[exc.start]:02x} "
                f"at offset {exc.start}"
            ) from None

    def too_big(self, path: Path) -> None:
        raise ConfigError(
            f"{path}: expands past {self.max_bytes} bytes with its includes; expected a "
            f"system prompt within [butler] max_prompt_bytes = {self.max_bytes}"
        )


def compose_system_prompt(
    prompt_file: Path,
    roster: Path,
    memory: str | None = None,
    max_bytes: int = DEFAULT_MAX_PROMPT_BYTES,
) -> str:
    """The butler's whole system prompt: its file, shared snippets, then memory.

    ``prompt_file`` is read from its butler folder (which the owner may have linked
    into the roster), includes and snippets from ``roster``; below those folders no
    link is followed. Blocking: it reads files.
    """
    prompt_file = Path(os.path.abspath(prompt_file))
    expansion = _Expansion(roster, max_bytes, prompt_file.parent)
    parts = [expansion.expand(prompt_file.parent, prompt_file.name, ()).strip()]
    for name in SHARED_SNIPPETS:
        snippet = f"shared/{name}"
        if untrusted.exists(expansion.roster, snippet):
            parts.append(expansion.expand(expansion.roster, snippet, ()).strip())
    if memory:
        parts.append(memory.strip())
    return "\n\n".join(p for p in parts if p) + "\n"
