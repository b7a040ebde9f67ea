"""``butler ask``, ``butler chat`` and ``butler sources``: questions answered from sources.

These commands only assemble: the user config and the runner do the work. A
user's mistake is one line on stderr and exit status 2; an agent that fails
exits 1 with its stderr in the message; ``chat`` exits with the agent's status.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from butler.cli.common import console, fail, names, run, sub_app, waiting
from butler.errors import UserError
from butler.subagent.sources import add_source, config_path, load_user_config, remove_source

if TYPE_CHECKING:
    from butler.subagent.runner import SubagentRunner

app = sub_app()

SourcesOption = Annotated[
    str,
    typer.Option(
        "--sources",
        "-s",
        help="Comma-separated source names from `butler sources list`, e.g. langchain,docs.",
        show_default=False,
    ),
]

sources_app = sub_app(
    help="The sources `butler ask` and `butler chat` can read: git checkouts, folders, files."
)
app.add_typer(sources_app, name="sources")

ASK_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler sources add langchain ~/src/langchain\n\n"
    '  butler ask --sources langchain "How do I create a tool?"\n\n'
    '  butler ask -s langchain,notes "Which retriever do my notes use?" > answer.md\n\n'
    "The answer is the agent's standard output. The agent is \\[agents] default_agent "
    "(claude-code unless configured) in config.toml; the prompt comes from "
    "prompt_template.md beside it. Both live in the user config folder "
    "(~/.config/butler on Linux) or in $BUTLER_CONFIG_HOME."
)
CHAT_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler chat --sources langchain\n\n"
    "  butler chat -s langchain,notes\n\n"
    "The agent starts in a temp folder holding one symlink per source; the folder is "
    "removed when the session ends. butler exits with the agent's exit status."
)


def source_names(sources: str) -> list[str]:
    """``--sources`` as a list; at least one name."""
    found = names(sources)
    if not found:
        fail("--sources: name at least one source, e.g. --sources langchain,docs")
    return found


def _runner() -> SubagentRunner:
    """The runner over the user's config; a bad config is one line and exit 2."""
    from butler.subagent.runner import SubagentRunner

    try:
        config = load_user_config()
    except UserError as exc:
        fail(str(exc))
    return SubagentRunner(config.agents, config.sources, config.sandbox)


@app.command("ask", epilog=ASK_EPILOG)
def ask(
    question: Annotated[str, typer.Argument(help="The question, in quotes.", show_default=False)],
    sources: SourcesOption,
    timeout: Annotated[
        float | None,
        typer.Option(help="Seconds to wait for the answer (default: ask_timeout_seconds, 600)."),
    ] = None,
) -> None:
    """Answer a question from the named sources, using the default agent headless."""
    chosen = source_names(sources)
    if not question.strip():
        fail("the question is empty; pass it in quotes after the options")
    if timeout is not None and timeout <= 0:
        fail(f"--timeout: expected a positive number of seconds, found {timeout:g}")
    runner = _runner()
    with waiting(f"asking {runner.config.default_agent}…"):
        answer = run(runner.ask(chosen, question, timeout_s=timeout), signals=True)
    sys.stdout.write(answer if answer.endswith("\n") or not answer else answer + "\n")
    sys.stdout.flush()


@app.command("chat", epilog=CHAT_EPILOG)
def chat(sources: SourcesOption) -> None:
    """Open the default agent interactively with the named sources in its folder."""
    chosen = source_names(sources)
    code = run(_runner().chat(chosen), signals=True)
    raise typer.Exit(code if code >= 0 else 128 - code)


@sources_app.command(
    "list", epilog="[bold]Example[/bold]\n\n  butler sources list", help="List the sources."
)
def sources_list() -> None:
    """List every configured source with its kind and path."""
    try:
        config = load_user_config()
    except UserError as exc:
        fail(str(exc))
    if not len(config.sources):
        typer.echo(f"no sources in {config.path}; add one with: butler sources add NAME PATH")
        return
    from rich.table import Column, Table
    from rich.text import Text

    table = Table(Column("name", no_wrap=True), "kind", Column("path", overflow="fold"))
    for source in config.sources:
        table.add_row(source.name, source.kind, Text(str(source.path)))
    console().print(table)


@sources_app.command(
    "add",
    epilog="[bold]Examples[/bold]\n\n"
    "  butler sources add langchain ~/src/langchain\n\n"
    "  butler sources add readme ./README.md",
)
def sources_add(
    name: Annotated[str, typer.Argument(help="The name to ask by, e.g. langchain.")],
    path: Annotated[Path, typer.Argument(help="A git checkout, a folder or a file.")],
) -> None:
    """Add a source to \\[sources] in config.toml (the rest of the file is kept as written)."""
    try:
        source = add_source(name, path)
    except UserError as exc:
        fail(str(exc))
    typer.echo(f"added {source.name} ({source.kind}) -> {source.path} in {config_path()}")


@sources_app.command(
    "remove",
    epilog="[bold]Examples[/bold]\n\n  butler sources remove langchain\n\n"
    "  butler sources list\n\n"
    "Only the entry goes; the folder or file it named is not touched.",
)
def sources_remove(
    name: Annotated[str, typer.Argument(help="The source's name, from butler sources list.")],
) -> None:
    """Remove a source from \\[sources] in config.toml (the rest of the file is kept)."""
    try:
        source = remove_source(name)
    except UserError as exc:
        fail(str(exc))
    typer.echo(f"removed {source.name} ({source.path}) from {config_path()}")
