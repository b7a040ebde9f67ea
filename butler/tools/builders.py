"""Builder tools: spawn a builder, list them, look one up, stop one, prune finished ones."""

# No postponed annotations: FastMCP reads the argument types (and their bounds) at runtime.
from pathlib import Path
from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from butler.builders.git import top_of
from butler.builders.modes import SpawnOptions
from butler.builders.prune import prune
from butler.builders.records import builder_view
from butler.config import ButlerConfig
from butler.context import ButlerContext
from butler.errors import ButlerError, UserError
from butler.security.caller import current_caller
from butler.tools.limits import Name, PathText, ProtocolArgs, optional_text

#: A builder's id as ``butler builders`` shows it.
BuilderId = Annotated[str, Field(min_length=1, max_length=200)]


def register_builder_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``builder_spawn``, ``builder_list``, ``builder_get`` and ``builder_prune`` to ``mcp``."""
    _register_spawn(mcp, butler)
    _register_views(mcp, butler)


def _register_spawn(mcp: FastMCP, butler: ButlerContext) -> None:
    Task = optional_text(butler.config.butler.max_prompt_bytes)
    # Once, as the daemon starts: a session that makes a .git later chooses nothing.
    allowed = session_repos(butler.config)

    @mcp.tool
    async def builder_spawn(
        repo: PathText,
        task: Task = None,
        files: Annotated[list[PathText] | None, Field(max_length=1000)] = None,
        protocol: Name = None,
        args: ProtocolArgs = None,
        project: Name = None,
        shell: bool = False,
        role: Name = None,
        headless: bool = False,
        runtime: Name = None,
    ) -> dict[str, Any]:
        """Delegate work to a builder: this butler's runtime in its own git worktree.

        Give exactly one mode: ``task`` (with optional context ``files``, relative to
        ``repo``), ``protocol`` (a protocol of this butler, optional JSON ``args``),
        ``project`` (a spec id: ``specs/<id>-*.md`` in ``repo``) or ``shell`` (no
        prompt, optional ``role`` file). The builder gets branch ``builder/<id>``, a
        worktree under ``<repo>/.builders/`` and a detached tmux session; with
        ``headless`` it runs to completion instead and the result is returned.
        ``runtime`` picks another runtime type than the butler's own for this builder.
        """
        options = SpawnOptions(
            task=task,
            files=tuple(files or ()),
            protocol=protocol,
            args=args,
            project=project,
            shell=shell,
            role=role,
            runtime=runtime,
        )
        caller = current_caller()
        session = caller.is_session
        source = "trigger" if session else "external"
        try:
            where = session_repo(allowed, repo) if session else Path(repo)
            return await butler.builders.spawn(
                options, where, source, headless, caller=caller.session_id
            )
        except ButlerError as exc:
            raise ToolError(str(exc)) from None


def session_repos(config: ButlerConfig) -> list[Path]:
    """The repositories a session may start builders in: ``[butler.builders] repos``, else
    the repository holding the butler folder (none when it is in none). Asked once, when
    the daemon starts: a session writes its butler folder, so asked again it could have
    made the butler folder a repository of its own."""
    listed = config.butler.builders.repos
    if listed is not None:
        return [Path(path).resolve() for path in listed]
    try:
        return [top_of(config.config_dir)]
    except UserError:
        return []


def session_repo(allowed: list[Path], repo: str) -> Path:
    """``repo`` as a session may use it: one of ``allowed`` (:func:`session_repos`),
    resolved now (so a link the session flips afterwards changes nothing); else one line
    naming the setting."""
    path = Path(repo).resolve()
    if path not in allowed:
        listing = ", ".join(map(str, allowed)) or "none"
        raise UserError(
            f"builder_spawn: repository {repo} is not one a session may use; the owner lists "
            f"them in [butler.builders] repos in butler.toml (now: {listing})"
        )
    return path


def _register_views(mcp: FastMCP, butler: ButlerContext) -> None:
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
    async def builder_stop(builder_id: BuilderId) -> dict[str, Any]:
        """End a running builder's runtime (its whole process tree); it is recorded cancelled.

        Its worktree, branch and last screen stay; ``builder_prune`` removes them.
        """
        try:
            return await butler.builders.stop_builder(builder_id)
        except ButlerError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool
    async def builder_prune(force: bool = False) -> list[dict[str, Any]]:
        """Remove finished builders' tmux sessions, worktrees and merged branches.

        A worktree with uncommitted changes and an unmerged branch are kept unless ``force``.
        """
        return await prune(butler.builders, force)
