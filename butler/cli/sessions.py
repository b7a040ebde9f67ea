"""``butler trigger``, ``butler sessions``, ``butler logs``: a butler's sessions from the shell.

Each asks the running daemon through its MCP tools (``trigger``,
``session_list``, ``session_get``) with the owner token, by the light client
of :mod:`butler.client`: trying a butler or reading why a session failed
needs neither Python nor the dashboard.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated, Any

import typer

from butler.cli.common import ConfigOption, JsonOption, address, console, fail, sub_app, waiting
from butler.errors import ButlerError, UserError
from butler.store.session_ids import short

app = sub_app()

#: How often ``butler logs --follow`` asks for the session while it runs.
FOLLOW_EVERY_S = 1.0
#: A session's own limit when neither --timeout nor butler.toml gives one (as the config's).
DEFAULT_TIMEOUT_S = 600
#: Statuses of a session that has not ended.
OPEN = ("pending", "running")

TRIGGER_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    '  butler trigger -c roster/health "What is due today?"\n\n'
    '  butler trigger -c roster/health --context "It is Monday." "Plan my week."\n\n'
    "  butler trigger -c roster/health - < prompt.txt\n\n"
    '  butler trigger -c roster/health --json "Status?" | jq .cost_usd\n\n'
    "The daemon must be running (butler run or butler up). The answer goes to stdout; "
    "a failed session prints its error on stderr and exits 1. A prompt of - is read "
    "from standard input, which keeps it out of the process list."
)
SESSIONS_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler sessions -c roster/health\n\n"
    "  butler sessions -c roster/health --status failed --limit 50\n\n"
    "  butler sessions -c roster/health --source schedule:daily-review --json"
)
LOGS_EPILOG = (
    "[bold]Examples[/bold]\n\n"
    "  butler logs 562db1d7 -c roster/health\n\n"
    "  butler logs 562db1d7 -c roster/health --follow\n\n"
    "The session's id is in the first column of butler sessions (and on its dashboard "
    "page): its first digits are enough, 4 or more, as git takes a commit's. With "
    "--follow, what the runtime does (each tool call, by name) is shown on stderr as it "
    "happens; the whole session, arguments included, is printed when it ends. The exit "
    "status is 0 whenever the session is shown, failed or not."
)


def call(config: Any, tool: str, arguments: dict[str, Any], timeout: float, **kw: Any) -> Any:
    """One tool of the running daemon; a refusal is one line and exit 2, else 1."""
    from butler.client import tool_call

    try:
        return tool_call(config, tool, arguments, timeout=timeout, **kw)
    except UserError as exc:
        fail(str(exc), 2)
    except ButlerError as exc:
        fail(str(exc), 1)


@app.command(epilog=TRIGGER_EPILOG)
def trigger(
    prompt: Annotated[str, typer.Argument(help="What to ask; - reads it from stdin.")],
    config: ConfigOption = None,
    context: Annotated[
        str | None, typer.Option(help="Text put before the prompt.", show_default=False)
    ] = None,
    max_turns: Annotated[
        int | None, typer.Option(help="At most this many turns (default: butler.toml).")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option(help="Seconds the session may run (default: butler.toml).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Run one session on the running butler and print its answer."""
    if prompt == "-":
        prompt = sys.stdin.read()
    if not prompt.strip():
        fail('the prompt is empty; expected what to ask, e.g. butler trigger -c DIR "Hello"')
    cfg = address(config)
    arguments = {"prompt": prompt, "context": context, "max_turns": max_turns}
    arguments["timeout_s"] = timeout
    arguments = {k: v for k, v in arguments.items() if v is not None}
    # The client waits the session's whole time: its timeout, plus time in the queue.
    wait = (timeout or getattr(cfg, "timeout_s", None) or DEFAULT_TIMEOUT_S) + 300
    with waiting(f"{cfg.name}: session queued…") as status:

        def progress(_done: float, _total: float | None, message: str | None) -> None:
            if status is not None and message:
                status.update(f"{cfg.name}: session {message}…")

        result = call(cfg, "trigger", arguments, wait, progress=progress)
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    elif result.get("success") and result.get("output"):
        typer.echo(result["output"].rstrip("\n"))
    elif result.get("output"):
        # What a failed runtime printed ("Not logged in") is no answer: never on stdout.
        typer.echo(
            f"the runtime printed, before it failed:\n{_indented(result['output'])}", err=True
        )
    if not result.get("success"):
        error = result.get("error") or "the session failed with no error recorded"
        typer.secho(f"butler: error: {error}", fg="red", err=True)
        where = f" -c {config}" if config is not None else ""
        typer.echo(
            f"the whole session: butler logs {short(result.get('session_id'))}{where}", err=True
        )
        raise typer.Exit(1)


@app.command(epilog=SESSIONS_EPILOG)
def sessions(
    config: ConfigOption = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first.")] = 20,
    status: Annotated[
        str | None,
        typer.Option(
            help="Only this status: pending, running, succeeded, failed...", show_default=False
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            help="Only this trigger source, e.g. external or schedule:NAME.", show_default=False
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """List the butler's recent sessions: status, source, duration, cost, error."""
    cfg = address(config)
    arguments: dict[str, Any] = {"limit": limit, "status": status, "trigger_source": source}
    rows = call(cfg, "session_list", {k: v for k, v in arguments.items() if v is not None}, 60)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        where = f" -c {config}" if config is not None else ""
        typer.echo(f'no sessions yet; start one with: butler trigger{where} "Hello"')
        return
    print_sessions(rows)


def print_sessions(rows: list[dict[str, Any]]) -> None:
    """One line per session whatever the terminal's width: ids whole (they are pasted into
    butler logs), the error cut to what is left (butler logs shows it whole)."""
    from rich.table import Column, Table
    from rich.text import Text

    head = ("session", "started", "status", "source", "duration", "cost")
    cells = [
        (
            short(row.get("id")),
            _when(row.get("created_at"), seconds=False),
            str(row.get("status")),
            _cut(str(row.get("trigger_source") or "-"), 24),
            _duration(row.get("duration_ms")),
            _cost(row.get("cost_usd")),
        )
        for row in rows
    ]
    # A column with nothing to say (no cost for a runtime that reports none) leaves its room.
    kept = [i for i in range(len(head)) if i < 3 or any(c[i] != "-" for c in cells)]
    out = console()
    widths = [max(len(head[i]), *(len(c[i]) for c in cells)) for i in kept]
    # Each column costs its width, a space each side and a border; the error gets the rest.
    room = max(8, out.width - sum(widths) - 3 * (len(kept) + 1) - 1)
    table = Table(*(head[i] for i in kept), Column("error", no_wrap=True, overflow="ellipsis"))
    for row, shown in zip(rows, cells, strict=True):
        line = [Text(shown[i], style=_STYLE.get(shown[i], "") if i == 2 else "") for i in kept]
        table.add_row(*line, Text(_cut(first_line(row.get("error")), room), style="red"))
    out.print(table)


def _cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, an ellipsis saying where it was cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


_STYLE = {"succeeded": "green", "failed": "red", "running": "yellow", "pending": "yellow"}


@app.command(epilog=LOGS_EPILOG)
def logs(
    session: Annotated[
        str,
        typer.Argument(
            help="The session's id, or its first digits (4 or more).", show_default=False
        ),
    ],
    config: ConfigOption = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Keep watching until the session ends, each tool call shown as it happens.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Show one session whole: prompt, tool calls, answer or error (--follow)."""
    cfg = address(config)
    row = call(cfg, "session_get", {"session_id": session}, 60)
    if follow and row.get("status") in OPEN:
        seen, shown = row.get("status"), 0
        typer.echo(f"session {session}: {seen}", err=True)
        with waiting(f"session {seen}…") as spinner:
            while row.get("status") in OPEN:
                # What the runtime says it does (its tool calls), as it says it.
                activity = row.get("activity") if isinstance(row.get("activity"), list) else []
                for line in activity[shown:]:
                    typer.echo(f"  {line}", err=True)
                shown = max(shown, len(activity))
                time.sleep(FOLLOW_EVERY_S)
                row = call(cfg, "session_get", {"session_id": session}, 60)
                if row.get("status") != seen:
                    seen = row.get("status")
                    if spinner is not None:
                        spinner.update(f"session {seen}…")
                    else:
                        typer.echo(f"session {session}: {seen}", err=True)
    if as_json:
        typer.echo(json.dumps(row, indent=2))
    else:
        print_session(row)


def print_session(row: dict[str, Any]) -> None:
    """A session as a person reads it: what, when, what it did, what came of it."""
    echo = typer.echo
    echo(f"session   {row.get('id')}")
    echo(f"status    {row.get('status')}  ({row.get('trigger_source')}, {row.get('runtime')})")
    echo(f"started   {_when(row.get('started_at') or row.get('created_at'))}")
    tokens = f"{row.get('input_tokens') or 0} in, {row.get('output_tokens') or 0} out"
    echo(f"took      {_duration(row.get('duration_ms'))}, {tokens}, {_cost(row.get('cost_usd'))}")
    if row.get("model"):
        echo(f"model     {row['model']}")
    echo("\nprompt:")
    echo(_indented(row.get("prompt")))
    calls = row.get("tool_calls") or []
    echo(f"\ntool calls ({len(calls)}):")
    for item in calls:
        if not isinstance(item, dict):
            continue
        arguments = json.dumps(item.get("arguments") or {}, ensure_ascii=False)
        echo(f"  {item.get('name')}({arguments})")
        if item.get("error"):
            typer.secho(f"    error: {item['error']}", fg="red")
    if row.get("output"):
        # Only a session that succeeded has an answer; a failed one's output is what its
        # runtime printed on the way (a CLI's "Not logged in"), said as such.
        labels = {"succeeded": "answer:", "running": "output so far:", "pending": "output:"}
        echo("\n" + labels.get(str(row.get("status")), "printed before it ended (no answer):"))
        echo(_indented(row.get("output")))
    if row.get("error"):
        typer.secho("\nerror:", fg="red")
        typer.secho(_indented(row.get("error")), fg="red")


def first_line(text: Any) -> str:
    """The first non-blank line of an error, for a table cell."""
    for line in str(text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _indented(text: Any) -> str:
    return "\n".join(f"  {line}" for line in str(text or "").splitlines()) or "  -"


def _when(stamp: Any, seconds: bool = True) -> str:
    """An ISO time as the local time a person reads, to the second (or minute, in a table)."""
    from datetime import datetime

    form = "%Y-%m-%d %H:%M:%S" if seconds else "%m-%d %H:%M"
    try:
        return datetime.fromisoformat(str(stamp)).astimezone().strftime(form)
    except ValueError:
        return str(stamp or "-")


def _duration(ms: Any) -> str:
    if not isinstance(ms, int | float):
        return "-"
    return f"{ms / 1000:.1f} s" if ms < 60_000 else f"{ms / 60_000:.1f} min"


def _cost(usd: Any) -> str:
    return f"${usd:.4f}" if isinstance(usd, int | float) else "-"
