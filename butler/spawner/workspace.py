"""The ephemeral workspace of one invocation: a private temp folder of MCP configs.

``<system temp>/butler_<name>_<uuid>/`` holds ``mcp.json`` (the spec's format)
and the same locked-down server in each CLI's own format, each naming exactly
one server: this butler. With no endpoint the configs are empty objects, so an
agent cannot call back into any MCP server at all. The folder is removed when
the invocation ends, however it ends; leftovers of a crashed daemon are swept
at start-up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from butler.paths import pid_alive
from butler.runtimes.base import McpEndpoint

OWNER_FILE = ".owner-pid"


def _claude_format(mcp: McpEndpoint) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": mcp.transport, "url": mcp.url}
    if mcp.headers:
        entry["headers"] = dict(mcp.headers)
    return {"mcpServers": {mcp.name: entry}}


def _gemini_format(mcp: McpEndpoint) -> dict[str, Any]:
    key = "httpUrl" if mcp.transport == "http" else "url"
    entry = {key: mcp.url, "headers": dict(mcp.headers), "trust": True}
    return {"mcpServers": {mcp.name: entry}}


def _cursor_format(mcp: McpEndpoint) -> dict[str, Any]:
    return {"mcpServers": {mcp.name: {"url": mcp.url, "headers": dict(mcp.headers)}}}


def _opencode_format(mcp: McpEndpoint) -> dict[str, Any]:
    entry = {"type": "remote", "url": mcp.url, "headers": dict(mcp.headers), "enabled": True}
    return {"mcp": {mcp.name: entry}}


#: Each CLI's MCP config file, relative to the workspace, and how to render it.
CONFIG_FORMATS = {
    "mcp.json": _claude_format,
    ".mcp.json": _claude_format,
    ".gemini/settings.json": _gemini_format,
    ".cursor/mcp.json": _cursor_format,
    "opencode.json": _opencode_format,
}


def write_mcp_configs(folder: Path, mcp: McpEndpoint | None) -> dict[str, Path]:
    """Write every format into ``folder``; empty objects when ``mcp`` is None."""
    written: dict[str, Path] = {}
    for relative, render in CONFIG_FORMATS.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        data = render(mcp) if mcp is not None else {}
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        written[relative] = path
    return written


def temp_root() -> Path:
    return Path(tempfile.gettempdir())


class Workspace:
    """A private temp folder for one invocation, removed on exit."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.path = temp_root() / f"{prefix}{uuid.uuid4()}"
        self.configs: dict[str, Path] = {}

    @property
    def mcp_config(self) -> Path:
        return self.path / "mcp.json"

    def create(self) -> Workspace:
        self.path.mkdir(mode=0o700)
        (self.path / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
        return self

    def write_configs(self, mcp: McpEndpoint | None) -> dict[str, Path]:
        """The MCP configs naming ``mcp`` (empty ones for None); return where they are."""
        self.configs = write_mcp_configs(self.path, mcp)
        return self.configs

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _owner_alive(folder: Path) -> bool:
    try:
        pid = int((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return pid == os.getpid() or pid_alive(pid)


def sweep_leftovers(prefix: str) -> list[Path]:
    """Remove workspaces named ``prefix*`` whose owning process is gone."""
    removed: list[Path] = []
    for folder in temp_root().glob(f"{prefix}*"):
        if folder.is_dir() and not _owner_alive(folder):
            with contextlib.suppress(OSError):
                shutil.rmtree(folder)
                removed.append(folder)
    return removed
