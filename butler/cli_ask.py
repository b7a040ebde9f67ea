"""``butler ask``, ``butler chat`` and ``butler sources``: questions answered from sources.

These commands only assemble: the user config and the runner do the work. A
user's mistake is one line on stderr and exit status 2; an agent that fails
exits 1 with its stderr in the message; ``chat`` exits with the agent's status.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from butler.errors import ButlerError, UserError

if TYPE_CHECKING:
    from butler.subagent.runner import SubagentRunner

T = TypeVar("T")

SourcesOption = Annotated[
    str,
    typer.Option(
        "--sources",
        "-s",
        help="Comma-separated source names from `butler sources list`, e.g. langchain,docs.",
        show_default=False,
    ),
]

sources_app = typer.Typer(
    help="The sources `butler ask` and `butler chat` can read: git checkouts, folders, files.",
    no_args_is_help=True,
)

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


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"butler: error: {message}", err=True)
    raise typer.Exit(code)


class _Signalled(Exception):
    """SIGTERM or SIGHUP arrived; the run was cancelled so its cleanup ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


async def _cancel_on_signals(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro``; SIGTERM and SIGHUP (a closed terminal) cancel it instead of killing us.

    By default those signals end the process on the spot, skipping the
    ``finally`` that kills the agent and removes the temp folder.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def cancel(signum: int) -> None:
        received.append(signum)
        task.cancel()

    handled = (signal.SIGTERM, signal.SIGHUP)
    for signum in handled:
        loop.add_signal_handler(signum, cancel, signum)
    try:
        return await coro
    except asyncio.CancelledError:
        if received:
            raise _Signalled(received[0]) from None
        raise
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine; butler's errors become one message and an exit status."""
    from butler.subagent.template import PromptTemplateError

    try:
        return asyncio.run(_cancel_on_signals(coro))
    except PromptTemplateError as exc:
        # The spec fixes the message itself; where the file is comes after it.
        _fail(f"{exc} (in {exc.path})" if exc.path else str(exc))
    except UserError as exc:
        _fail(str(exc))
    except ButlerError as exc:
        _fail(str(exc), 1)
    except _Signalled as exc:
        raise typer.Exit(128 + exc.signum) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


def _names(sources: str) -> list[str]:
    names = [name.strip() for name in sources.split(",") if name.strip()]
    if not names:
        _fail("--sources: name at least one source, e.g. --sources langchain,docs")
    return names


def _runner() -> SubagentRunner:
    """The runner over the user's config; a bad config is one line and exit 2."""
    from butler.subagent.runner import SubagentRunner
    from butler.subagent.sources import load_user_config

    try:
        config = load_user_config()
    except UserError as exc:
        _fail(str(exc))
    return SubagentRunner(config.agents, config.sources)


def ask(
    question: Annotated[str, typer.Argument(help="The question, in quotes.", show_default=False)],
    sources: SourcesOption,
    timeout: Annotated[
        float | None,
        typer.Option(help="Seconds to wait for the answer (default: ask_timeout_seconds, 600)."),
    ] = None,
) -> None:
    """Answer a question from the named sources, using the default agent headless."""
    names = _names(sources)
    if not question.strip():
        _fail("the question is empty; pass it in quotes after the options")
    if timeout is not None and timeout <= 0:
        _fail(f"--timeout: expected a positive number of seconds, found {timeout:g}")
    runner = _runner()
    if sys.stderr.isatty():
        typer.echo(f"asking {runner.config.default_agent}…", err=True)
    answer = _run(runner.ask(names, question, timeout_s=timeout))
    sys.stdout.write(answer if answer.endswith("\n") or not answer else answer + "\n")
    sys.stdout.flush()


def chat(sources: SourcesOption) -> None:
    """Open the default agent interactively with the named sources in its folder."""
    names = _names(sources)
    code = _run(_runner().chat(names))
    raise typer.Exit(code if code >= 0 else 128 - code)


@sources_app.command(
    "list", epilog="[bold]Example[/bold]\n\n  butler sources list", help="List the sources."
)
def sources_list() -> None:
    """List every configured source with its kind and path."""
    from butler.subagent.sources import load_user_config

    try:
        config = load_user_config()
    except UserError as exc:
        _fail(str(exc))
    if not len(config.sources):
        typer.echo(f"no sources in {config.path}; add one with: butler sources add NAME PATH")
        return
    width = max(len(source.name) for source in config.sources)
    for source in config.sources:
        typer.echo(f"{source.name:<{width}}  {source.kind:<7}  {source.path}")


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
    """Add a source to [sources] in config.toml (the rest of the file is kept as written)."""
    from butler.subagent.sources import add_source, config_path

    try:
        source = add_source(name, path)
    except UserError as exc:
        _fail(str(exc))
    typer.echo(f"added {source.name} ({source.kind}) -> {source.path} in {config_path()}")


def register_ask(app: typer.Typer) -> None:
    """Add ``ask``, ``chat`` and ``sources`` to the ``butler`` command line."""
    app.command("ask", epilog=ASK_EPILOG)(ask)
    app.command("chat", epilog=CHAT_EPILOG)(chat)
    app.add_typer(sources_app, name="sources")
