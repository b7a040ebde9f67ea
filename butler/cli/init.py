"""``butler init NAME``: a new butler folder, ready to run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from butler.cli.common import fail, sub_app
from butler.errors import UserError

app = sub_app()

INIT_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler init finance\n\n"
    "  butler init garden --roster ~/butlers --port 8120\n\n"
    '  butler init research --runtime codex --description "Reads papers for me."\n\n'
    "Writes ROSTER/NAME/butler.toml (commented), CLAUDE.md (the system prompt) and "
    "skills/; the port is the next after the roster's highest (8101 for the first). "
    "An existing folder is never touched."
)


@app.command(epilog=INIT_EPILOG)
def init(
    name: Annotated[str, typer.Argument(help="The butler's name, e.g. finance.")],
    roster: Annotated[
        Path, typer.Option("--roster", "-r", help="The roster folder to create it in.")
    ] = Path("roster"),
    port: Annotated[
        int | None, typer.Option(help="Its port (default: the next free one of the roster).")
    ] = None,
    runtime: Annotated[
        str, typer.Option(help="claude-code, codex, gemini, opencode or copilot.")
    ] = "claude-code",
    description: Annotated[
        str | None, typer.Option(help="One line saying what it is for.", show_default=False)
    ] = None,
) -> None:
    """Make a new butler folder: butler.toml (commented), CLAUDE.md, skills/."""
    from butler.scaffold import init_butler

    try:
        folder = init_butler(roster, name, port=port, runtime=runtime, description=description)
    except UserError as exc:
        fail(str(exc))
    typer.echo(f"created {folder}/: butler.toml, CLAUDE.md, skills/")
    typer.echo("next:")
    typer.echo(f"  butler run --config {folder}")
    typer.echo(f'  butler trigger --config {folder} "Hello"')
