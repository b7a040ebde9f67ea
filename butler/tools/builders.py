"""Builder tools: spawn a builder, list them, look one up, prune finished ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

from butler.builders.modes import SpawnOptions
from butler.builders.prune import prune
from butler.builders.records import builder_view
from butler.errors import ButlerError
from butler.tools.context import ButlerContext
from butler.tools.ledger_middleware import calling_session


def register_builder_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``builder_spawn``, ``builder_list``, ``builder_get`` and ``builder_prune`` to ``mcp``."""

    @mcp.tool
    async def builder_spawn(
        repo: str,
        task: str | None = None,
        files: list[str] | None = None,
        protocol: str | None = None,
        args: dict[str, Any] | None = None,
        project: str | None = None,
        shell: bool = False,
        role: str | None = None,
        headless: bool = False,
    ) -> dict[str, Any]:
        """Delegate work to a builder: this butler's runtime in its own git worktree.

        Give exactly one mode: ``task`` (with optional context ``files``, relative to
        ``repo``), ``protocol`` (a protocol of this butler, optional JSON ``args``),
        ``project`` (a spec id: ``specs/<id>-*.md`` in ``repo``) or ``shell`` (no
        prompt, optional ``role`` file). The builder gets branch ``builder/<id>``, a
        worktree under ``<repo>/.builders/`` and a detached tmux session; with
        ``headless`` it runs to completion instead and the result is returned.
        """
        options = SpawnOptions(
            task=task,
            files=tuple(files or ()),
            protocol=protocol,
            args=args,
            project=project,
            shell=shell,
            role=role,
        )
        source = "trigger" if calling_session(butler.spawner.ledger) else "external"
        try:
            return await butler.builders.spawn(options, Path(repo), source, headless)
        except ButlerError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool
    async def builder_list(include_pruned: bool = False) -> list[dict[str, Any]]:
        """This butler's builders, newest first: id, type, status, branch, worktree, tmux."""
        return await butler.builders.builders(include_pruned)

    @mcp.tool
    async def builder_get(builder_id: str) -> dict[str, Any]:
        """One builder by id, with what its terminal shows now if it is running."""
        manager = butler.builders
        try:
            row = await manager.find(builder_id)
        except ButlerError as exc:
            raise ToolError(str(exc)) from None
        return {**builder_view(row), "screen": await manager.screen(row)}

    @mcp.tool
    async def builder_prune(force: bool = False) -> list[dict[str, Any]]:
        """Remove finished builders' tmux sessions, worktrees and merged branches.

        A worktree with uncommitted changes and an unmerged branch are kept unless ``force``.
        """
        return await prune(butler.builders, force)
