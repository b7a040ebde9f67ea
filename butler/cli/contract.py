"""``butler adapter``: the runtime adapter contract (see the README) as a command.

Any orchestrator, in any language, drives butler sessions through files and
exit codes: ``spawn`` prints a session id, ``resume`` a message,
``check_status`` one of pending, active, completed, failed.
"""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from butler.cli.common import fail, load, one_line_errors, sub_app, waiting
from butler.config import ButlerConfig

app = sub_app()
adapter_app = sub_app(
    help="The adapter contract: spawn / resume / check_status sessions through files."
)
app.add_typer(adapter_app, name="adapter")

Wait = Annotated[bool, typer.Option("--wait", help="Block until the session has finished.")]
Timeout = Annotated[
    float | None,
    typer.Option("--timeout-minutes", help="Session time limit (default: the butler's)."),
]
Prompt = Annotated[
    str,
    typer.Argument(help='The prompt; "-" reads it from standard input, out of every process list.'),
]
Config = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="The butler's folder (default: $BUTLER_CONFIG)."),
]


def butler_config(ctx: typer.Context, config: Path | None) -> ButlerConfig:
    """The butler named by ``-c`` (before or after the sub-command), else $BUTLER_CONFIG."""
    folder = config or ctx.obj or os.environ.get("BUTLER_CONFIG")
    if not folder:
        fail("no butler given; expected --config DIR or the BUTLER_CONFIG environment variable")
    return load(Path(folder))


def prompt_text(prompt: str, cfg: ButlerConfig) -> str:
    """PROMPT itself, or standard input for "-" (bounded like a trigger's prompt)."""
    if prompt != "-":
        return prompt
    limit = cfg.butler.max_prompt_bytes
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        fail(f"PROMPT '-': standard input holds more than {limit} bytes (max_prompt_bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        fail("PROMPT '-': standard input is not UTF-8 text")
    if not text.strip():
        fail("PROMPT '-': standard input is empty; expected the prompt's text")
    return text


@adapter_app.callback()
def adapter_options(ctx: typer.Context, config: Config = None) -> None:
    """Drive butler sessions through files and exit codes; the daemon must be running."""
    ctx.obj = config


@adapter_app.command(
    epilog="Examples:\n\n  butler adapter spawn -c roster/general auth_brief.md state_auth.json "
    '"Act as the orchestrator for Auth"\n\n'
    "  butler adapter spawn auth_brief.md state_auth.json - < prompt.txt"
)
def spawn(
    ctx: typer.Context,
    brief_file: Path,
    state_file: Path,
    prompt: Prompt,
    wait: Wait = False,
    timeout_minutes: Timeout = None,
    config: Config = None,
) -> None:
    """Start a session for BRIEF_FILE and print its id (the same id while it is active)."""
    from butler.contract import runner

    cfg = butler_config(ctx, config)
    prompt = prompt_text(prompt, cfg)
    brief, state = brief_file.resolve(), state_file.resolve()
    with waiting("waiting for the session to finish…") if wait else nullcontext():
        with one_line_errors():
            session_id = runner.spawn(
                cfg, brief, state, prompt, wait=wait, timeout_minutes=timeout_minutes
            )
    typer.echo(session_id)


@adapter_app.command(
    epilog='Example:\n\n  butler adapter resume 3f1c... state_auth.json "Continue with validation"'
)
def resume(
    ctx: typer.Context,
    session_id: str,
    state_file: Path,
    prompt: Prompt,
    wait: Wait = False,
    timeout_minutes: Timeout = None,
    config: Config = None,
) -> None:
    """Continue SESSION_ID's conversation with PROMPT in a new linked session."""
    from butler.contract import runner

    cfg = butler_config(ctx, config)
    prompt = prompt_text(prompt, cfg)
    state = state_file.resolve()
    with waiting("waiting for the session to finish…") if wait else nullcontext():
        with one_line_errors():
            message = runner.resume(
                cfg, session_id, state, prompt, wait=wait, timeout_minutes=timeout_minutes
            )
    typer.echo(message)


@adapter_app.command("check_status", epilog="Example:\n\n  butler adapter check_status 3f1c...")
def check_status(ctx: typer.Context, session_id: str, config: Config = None) -> None:
    """Print pending, active, completed or failed; exit 1 when the id is unknown."""
    from butler.contract import runner

    with one_line_errors():
        status = runner.check_status(butler_config(ctx, config), session_id)
    typer.echo(status)
