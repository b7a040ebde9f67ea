"""The MCP config formats of the agent CLIs, as shared writers for the adapters.

Each adapter decides which file (or flag) its CLI reads and asks for it
through :meth:`RuntimeAdapter.mcp_config_files` or its command; these
functions only render one server, this butler, in each CLI's shape. With no
endpoint a table is empty, so a runtime cannot call back into any server.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from butler.security import untrusted


@dataclass(frozen=True)
class McpEndpoint:
    """How a runtime reaches its butler: exactly one server, keyed by the butler's name."""

    name: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    transport: str = "http"


#: butler's own format (the spec's ``mcp.json``): what the command runtime, external
#: runtimes and ``{mcp_config}`` read.
BUTLER_FILE = "mcp.json"
#: Every CLI's project-level MCP config name, written empty where an agent of the
#: user's (``butler ask``) must find no server at all.
EMPTY_FILES = (
    "mcp.json",
    ".mcp.json",
    ".gemini/settings.json",
    ".cursor/mcp.json",
    "opencode.json",
)

Entry = Callable[["McpEndpoint"], dict[str, Any]]


def claude_entry(mcp: McpEndpoint) -> dict[str, Any]:
    """Claude Code's (and butler's own) server entry; headers only when there are some."""
    entry: dict[str, Any] = {"type": mcp.transport, "url": mcp.url}
    if mcp.headers:
        entry["headers"] = dict(mcp.headers)
    return entry


def gemini_entry(mcp: McpEndpoint) -> dict[str, Any]:
    """Gemini CLI's server entry: ``httpUrl`` for streamable HTTP, ``url`` for SSE."""
    key = "httpUrl" if mcp.transport == "http" else "url"
    return {key: mcp.url, "headers": dict(mcp.headers), "trust": True}


def opencode_entry(mcp: McpEndpoint) -> dict[str, Any]:
    """OpenCode's remote server entry."""
    return {"type": "remote", "url": mcp.url, "headers": dict(mcp.headers), "enabled": True}


def servers(mcp: McpEndpoint | None, entry: Entry) -> dict[str, Any]:
    """The server table: this butler alone, or nothing."""
    return {mcp.name: entry(mcp)} if mcp is not None else {}


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def butler_file(workdir: Path, mcp: McpEndpoint | None) -> dict[Path, str]:
    """``<workdir>/mcp.json`` in butler's own format (an empty object without a server)."""
    data = {"mcpServers": servers(mcp, claude_entry)} if mcp is not None else {}
    return {workdir / BUTLER_FILE: to_json(data)}


def empty_files(folder: Path) -> dict[Path, str]:
    """Every CLI's config file in ``folder``, each an empty object."""
    return {folder / name: to_json({}) for name in EMPTY_FILES}


class ConfigFileError(OSError):
    """A runtime's config file could not be written; ``str()`` names the file and why."""

    def __str__(self) -> str:
        return str(self.strerror)


def write_files(files: Mapping[Path, str], roots: Sequence[Path]) -> None:
    """Write a runtime's config files (they hold its session token), each below one of
    ``roots``: its home and workspace, folders the runtime itself can write.

    So each is written as the untrusted-file module writes there: ``0600``, no link
    below the root followed (a linked folder on the way is refused), and whatever
    the runtime left at the file's own name (a link, a FIFO) replaced, never written
    through. :class:`ConfigFileError` for a file it cannot write.
    """
    for path, text in files.items():
        try:
            untrusted.write_below(roots, path, text.encode("utf-8"))
        except OSError as exc:
            reason = f"{path}: cannot write the runtime's config: {exc}"
            raise ConfigFileError(exc.errno, reason) from None
