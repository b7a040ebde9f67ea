"""``butler builders spawn|list|attach|stop|prune``: delegate work to builders.

The commands check what they can alone (the flag combinations, ``--args``,
``--files``), then ask the butler's running daemon over MCP, so every builder
is recorded as a session of that butler. A user's mistake, or a daemon that is
not running, is one line on stderr and exit status 2.
"""

from __future__ import annotations

import json
import os
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from butler.builders.modes import NothingToSpawn, SpawnOptions, choose_mode
from butler.cli.common import (
    ConfigOption,
    JsonOption,
    address,
    console,
    fail,
    load,
    shown_folder,
    sub_app,
    waiting,
)
from butler.errors import ButlerError, UserError

app = sub_app()
builders_app = sub_app(
    help="Builders: a butler's runtime at work in a git worktree and tmux (spawn, list, stop...).",
    epilog="[bold]Examples[/bold]\n\n"
    '  butler builders spawn -c roster/general "Fix the bug in auth.py"\n\n'
    "  butler builders list -c roster/general\n\n"
    "  butler builders attach task-a7f3-x9k2 -c roster/general\n\n"
    "  butler builders stop task-a7f3-x9k2 -c roster/general\n\n"
    "  butler builders prune -c roster/general\n\n"
    "butler builders alone lists them, as butler builders list does. The butler's daemon "
    "must be running. See docs/builders.md.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(builders_app, name="builders")

SPAWN_EPILOG = (
    "[bold]Modes[/bold] (exactly one)\n\n"
    '  task:      butler builders spawn -c roster/general "Fix the bug in auth.py"\n\n'
    '  task:      butler builders spawn -c roster/general --task "Refactor the logging" '
    "--files src/log.py,src/app.py\n\n"
    "  protocol:  butler builders spawn -c roster/general --protocol cleanup\n\n"
    "  protocol:  butler builders spawn -c roster/general --protocol experiment "
    '--args \'{"hypothesis": "Can we use Redis?"}\'\n\n'
    "  spec:      butler builders spawn -c roster/general --project 0009   (specs/0009-*.md, "
    "plans/0009-*.md)\n\n"
    "  shell:     butler builders spawn -c roster/general --shell --role reviewer\n\n"
    '  runtime:   butler builders spawn -c roster/general --runtime codex "Fix the bug"\n\n'
    "Each builder gets a branch builder/<id>, a worktree <repo>/.builders/<id> and a "
    "detached tmux session running the butler's runtime, locked down to the butler's own "
    "MCP server. The butler's daemon must be running (butler run --config roster/general). "
    "Then: butler builders attach ID, butler builders list, butler builders prune."
)

TaskText = Annotated[
    str | None, typer.Argument(help="The task, in words (task mode).", show_default=False)
]
Opt = typer.Option


@builders_app.callback()
def builders(
    ctx: typer.Context,
    config: ConfigOption = None,
    show_all: Annotated[bool, Opt("--all", help="Include pruned builders.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Builders: a butler's runtime at work in a git worktree and tmux (spawn, list, stop...)."""
    if ctx.invoked_subcommand is None:
        list_builders(config, show_all, as_json)


@builders_app.command(epilog=SPAWN_EPILOG)
def spawn(
    ctx: typer.Context,
    config: ConfigOption = None,
    text: TaskText = None,
    task: Annotated[str | None, Opt("--task", help="The task (task mode).")] = None,
    files: Annotated[
        str | None, Opt("--files", help="Comma-separated files the task is about.")
    ] = None,
    protocol: Annotated[
        str | None, Opt("--protocol", help="Run this protocol of the butler.")
    ] = None,
    args: Annotated[str | None, Opt("--args", help="Protocol arguments, a JSON object.")] = None,
    project: Annotated[
        str | None, Opt("--project", "-p", help="Implement specs/<ID>-*.md (spec mode).")
    ] = None,
    shell: Annotated[bool, Opt("--shell", help="An interactive session, no prompt.")] = False,
    role: Annotated[
        str | None, Opt("--role", help="Shell mode: a role name (roles/NAME.md).")
    ] = None,
    repo: Annotated[
        Path | None, Opt("--repo", help="The git repository to build in (default: here).")
    ] = None,
    headless: Annotated[
        bool, Opt("--headless", help="Run to completion through the spawner; print it.")
    ] = False,
    runtime: Annotated[
        str | None,
        Opt("--runtime", help="Runtime type for this builder (default: the butler's own)."),
    ] = None,
    as_json: Annotated[bool, Opt("--json", help="Print the builder as JSON.")] = False,
) -> None:
    """Delegate work to a builder: a task, a protocol, a spec, or a bare shell."""
    try:
        options = spawn_options(text, task, files, protocol, args, project, shell, role)
    except NothingToSpawn as exc:
        typer.echo(ctx.get_help())
        fail(str(exc))
    except UserError as exc:
        fail(str(exc))
    cfg = load(config)
    if runtime is not None:
        from butler.spawner.runtime_choice import check_runtime

        try:
            options = replace(options, runtime=check_runtime(cfg, runtime))
        except UserError as exc:
            fail(str(exc))
    arguments = tool_arguments(options, (repo or Path.cwd()).resolve(), headless)
    timeout = cfg.runtime.timeout_s + 60 if headless else 120
    with waiting("builder running…") if headless else nullcontext():
        found = ask(cfg, "builder_spawn", arguments, timeout)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
    elif headless:
        raise typer.Exit(print_headless(found))
    else:
        print_spawned(found, config)


@builders_app.command(
    epilog="[bold]Example[/bold]\n\n  butler builders attach task-a7f3-x9k2 -c roster/general"
)
def attach(
    builder_id: Annotated[str, typer.Argument(help="The builder's id.", show_default=False)],
    config: ConfigOption = None,
) -> None:
    """Join a builder's tmux session (detach again with Ctrl-b d)."""
    from butler.builders.tmux import Tmux, session_name
    from butler.client import DaemonNotRunning
    from butler.client import tool_call as daemon_tool

    cfg = address(config)
    try:
        found = daemon_tool(cfg, "builder_get", {"builder_id": builder_id}, timeout=30)
        socket, name = found.get("tmux_socket"), found.get("tmux_session")
    except DaemonNotRunning:
        # Builders outlive their daemon: their tmux session is found by name.
        socket, name = None, session_name(cfg.name, builder_id)
    except UserError as exc:
        fail(str(exc))
    if not name:
        fail(f"builder {builder_id} ran headless; it has no terminal to attach to")
    argv = Tmux(socket).attach_argv(name)
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}  # allow attaching from tmux
    os.execvpe(argv[0], argv, env)


@builders_app.command(
    "list",
    epilog="[bold]Examples[/bold]\n\n  butler builders list -c roster/general\n\n"
    "  butler builders list -c roster/general --all --json",
)
def list_command(
    config: ConfigOption = None,
    show_all: Annotated[bool, Opt("--all", help="Include pruned builders.")] = False,
    as_json: JsonOption = False,
) -> None:
    """List the butler's builders, grouped by type, from its session records."""
    list_builders(config, show_all, as_json)


def list_builders(config: Path | None, show_all: bool, as_json: bool) -> None:
    """``builders list``, and ``builders`` alone."""
    found = ask(address(config), "builder_list", {"include_pruned": show_all}, 30)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    print_builders(found)


@builders_app.command(
    epilog="[bold]Example[/bold]\n\n  butler builders stop task-a7f3-x9k2 -c roster/general"
)
def stop(
    builder_id: Annotated[str, typer.Argument(help="The builder's id.", show_default=False)],
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """End a running builder's runtime; it is recorded cancelled (prune removes it later)."""
    found = ask(address(config), "builder_stop", {"builder_id": builder_id}, 60)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    typer.echo(f"builder {found['id']} stopped ({found['status']}); branch {found['branch']}")


@builders_app.command(
    epilog="[bold]Examples[/bold]\n\n  butler builders prune -c roster/general\n\n"
    "  butler builders prune -c roster/general --force\n\n"
    "Without --force a worktree with uncommitted changes and a branch not merged into "
    "the repository's HEAD are kept."
)
def prune(
    config: ConfigOption = None,
    force: Annotated[
        bool, Opt("--force", help="Also remove dirty worktrees and unmerged branches.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Remove finished builders' worktrees, merged branches and tmux sessions."""
    found = ask(address(config), "builder_prune", {"force": force}, 120)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    if not found:
        typer.echo("nothing to prune: no finished builder is left")
    for item in found:
        done = ", ".join(f"{key} {value}" for key, value in item["prune"].items())
        typer.echo(f"{item['id']}: {done}")


def spawn_options(
    text: str | None,
    task: str | None,
    files: str | None,
    protocol: str | None,
    args: str | None,
    project: str | None,
    shell: bool,
    role: str | None,
) -> SpawnOptions:
    """The options as given: the mode rules of docs/builders.md, then ``--args``, ``--files``."""
    names = tuple(name.strip() for name in (files or "").split(",") if name.strip())
    options = SpawnOptions(
        text=text,
        task=task,
        files=names,
        protocol=protocol,
        args={} if args is not None else None,
        project=project,
        shell=shell,
        role=role,
    )
    choose_mode(options)
    parsed = parse_args_json(args) if args is not None else None
    for name in names:
        if not Path(name).exists():
            raise UserError(f"--files: {name} not found")
    resolved = tuple(str(Path(name).resolve()) for name in names)
    if role is not None and Path(role).is_file():
        role = str(Path(role).resolve())
    return SpawnOptions(text, task, resolved, protocol, parsed, project, shell, role)


def parse_args_json(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UserError(f"--args: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise UserError(
            f'--args: expected a JSON object like \'{{"hypothesis": "..."}}\', '
            f"found {type(value).__name__}"
        )
    return value


def tool_arguments(options: SpawnOptions, repo: Path, headless: bool) -> dict[str, Any]:
    arguments = {
        "repo": str(repo),
        "task": options.task_text,
        "files": list(options.files) or None,
        "protocol": options.protocol,
        "args": options.args,
        "project": options.project,
        "shell": options.shell,
        "role": options.role,
        "headless": headless,
        "runtime": options.runtime,
    }
    return {key: value for key, value in arguments.items() if value not in (None, False)}


def ask(config: Any, tool: str, arguments: dict[str, Any], timeout: float) -> Any:
    """Call one of the daemon's builder tools; its refusal is a user error (exit 2)."""
    from butler.client import tool_call

    try:
        return tool_call(config, tool, arguments, timeout=timeout)
    except UserError as exc:
        fail(str(exc), 2)
    except ButlerError as exc:
        fail(str(exc), 1)


def print_spawned(found: dict[str, Any], config: Path | None) -> None:
    typer.echo(f"builder {found['id']} started ({found['type']})")
    typer.echo(f"  branch    {found['branch']}")
    typer.echo(f"  worktree  {found['worktree']}")
    typer.echo(f"  session   {found['session_id']}")
    typer.echo(f"  attach    butler builders attach {found['id']} -c {shown_folder(config)}")


def print_headless(found: dict[str, Any]) -> int:
    """The session's output on stdout, a summary line on stderr; the exit status."""
    result = found["result"]
    if result.get("output"):
        typer.echo(result["output"])
    state = "succeeded" if result["success"] else f"failed: {result['error']}"
    typer.echo(
        f"builder {found['id']} ({found['type']}) {state}; branch {found['branch']}, "
        f"session {found['session_id']}",
        err=True,
    )
    return 0 if result["success"] else 1


def print_builders(found: list[dict[str, Any]]) -> None:
    """One table, grouped by type in the order spec, task, protocol, shell."""
    if not found:
        typer.echo("no builders; start one with: butler builders spawn")
        return
    # Ids and branches are copied into other commands: never cut, the summary wraps instead.
    from rich.table import Column, Table
    from rich.text import Text

    fixed = [Column(name, no_wrap=True) for name in ("type", "id", "status", "branch")]
    table = Table(*fixed, Column("summary", ratio=1))
    colour = {
        "running": "green",
        "succeeded": "blue",
        "failed": "red",
        "cancelled": "dim",
        "ended": "dim",
    }
    for mode in ("spec", "task", "protocol", "shell"):
        for b in (b for b in found if b["type"] == mode):
            flags = " [pruned]" if b["pruned"] else (" [headless]" if b["headless"] else "")
            style = colour.get(b["status"], "yellow")
            status = Text(b["status"], style=style)
            table.add_row(mode, b["id"], status, b["branch"], Text(f"{b['summary']}{flags}"))
    console().print(table)
