"""``butler adapter``: the runtime adapter contract (spec 002) as a command.

Any orchestrator, in any language, drives butler sessions through files and
exit codes: ``spawn`` prints a session id, ``resume`` a message,
``check_status`` one of pending, active, completed, failed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from butler.config import ButlerConfig

adapter_app = typer.Typer(
    help="The adapter contract: spawn / resume / check_status sessions through files.",
    no_args_is_help=True,
)

Wait = Annotated[bool, typer.Option("--wait", help="Block until the session has finished.")]
Timeout = Annotated[
    float | None,
    typer.Option("--timeout-minutes", help="Session time limit (default: the butler's)."),
]


def _config(ctx: typer.Context) -> ButlerConfig:
    from butler.cli import fail, load

    folder = ctx.obj
    if not folder:
        fail("no butler given; expected --config DIR or the BUTLER_CONFIG environment variable")
    return load(Path(folder))


@adapter_app.callback()
def adapter_options(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="The butler's folder (default: $BUTLER_CONFIG)."),
    ] = None,
) -> None:
    """Drive butler sessions through files and exit codes; the daemon must be running."""
    ctx.obj = config or os.environ.get("BUTLER_CONFIG")


@adapter_app.command(
    epilog="Example:\n\n  butler adapter -c roster/general spawn auth_brief.md state_auth.json "
    '"Act as the orchestrator for Auth"'
)
def spawn(
    ctx: typer.Context,
    brief_file: Path,
    state_file: Path,
    prompt: str,
    wait: Wait = False,
    timeout_minutes: Timeout = None,
) -> None:
    """Start a session for BRIEF_FILE and print its id (the same id while it is active)."""
    from butler.cli import run_async
    from butler.contract import runner

    config = _config(ctx)
    session_id = run_async(
        runner.spawn(
            config,
            brief_file.resolve(),
            state_file.resolve(),
            prompt,
            wait=wait,
            timeout_minutes=timeout_minutes,
        )
    )
    typer.echo(session_id)


@adapter_app.command(
    epilog='Example:\n\n  butler adapter resume 3f1c... state_auth.json "Continue with validation"'
)
def resume(
    ctx: typer.Context,
    session_id: str,
    state_file: Path,
    prompt: str,
    wait: Wait = False,
    timeout_minutes: Timeout = None,
) -> None:
    """Continue SESSION_ID's conversation with PROMPT in a new linked session."""
    from butler.cli import run_async
    from butler.contract import runner

    config = _config(ctx)
    message = run_async(
        runner.resume(
            config,
            session_id,
            state_file.resolve(),
            prompt,
            wait=wait,
            timeout_minutes=timeout_minutes,
        )
    )
    typer.echo(message)


@adapter_app.command("check_status", epilog="Example:\n\n  butler adapter check_status 3f1c...")
def check_status(ctx: typer.Context, session_id: str) -> None:
    """Print pending, active, completed or failed; exit 1 when the id is unknown."""
    from butler.cli import run_async
    from butler.contract import runner

    typer.echo(run_async(runner.check_status(_config(ctx), session_id)))


def register_adapter(app: typer.Typer) -> None:
    """Add ``butler adapter`` to the main CLI."""
    app.add_typer(adapter_app, name="adapter")
