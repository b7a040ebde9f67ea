"""One session at ``/sessions/<id>``: everything recorded, its trace, and "run again"."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from butler.builders.records import is_builder
from butler.dashboard.deliveries import render_deliveries
from butler.dashboard.render import cost, duration, e, ran_on, table, tokens, when


def trace_link(trace_url: str | None, trace_id: str | None) -> str:
    """A link to the session's trace where ``[butler.telemetry] trace_url`` says traces are."""
    if not trace_url or not trace_id:
        return ""
    href = trace_url.replace("{trace_id}", quote(trace_id, safe=""))
    return (
        f'<p><a id="trace" href="{e(href)}" rel="noopener noreferrer" target="_blank">'
        f"Trace {e(trace_id)}</a></p>"
    )


def _field(name: str, value: Any) -> str:
    return f"<dt>{e(name)}</dt><dd>{e(value if value not in (None, '') else '—')}</dd>"


def render_detail(
    row: dict[str, Any],
    screen: str | None,
    config_dir: str,
    *,
    trace_url: str | None = None,
    actions: str = "",
    deliveries: list[dict[str, Any]] | None = None,
) -> str:
    """Everything recorded about one session; a live builder's terminal as its output."""
    meta = row.get("metadata") or {}
    # The status and the error are said once, above everything: not again in this list.
    fields = [
        ("type", row["type"]),
        ("trigger source", row["trigger_source"]),
        ("runtime", row["runtime"]),
        ("ran on", ran_on(row)),
        ("model", row.get("model")),
        ("created", when(row.get("created_at"))),
        ("duration", duration(row)),
        ("tokens", tokens(row)),
        ("cost", cost(row)),
        ("trace id", row.get("trace_id")),
        ("run again of", meta.get("run_again_of")),
    ]
    if is_builder(row):
        attach = f"butler builders attach {meta.get('builder_id')} --config {config_dir}"
        fields += [
            ("builder", meta.get("builder_id")),
            ("branch", meta.get("branch")),
            ("worktree", meta.get("worktree")),
            ("tmux session", meta.get("tmux_session")),
            ("attach", attach if screen is not None else None),
        ]
    dl = "".join(_field(name, value) for name, value in fields)
    status = e(row["status"])
    error = row.get("error")
    parts = [
        f'<p>Status: <span class="status status-{status}" data-status="{status}">'
        f"{status}</span></p>"
        + (f'<p class="error" role="alert" id="error">{e(error)}</p>' if error else "")
        + f"{actions}{trace_link(trace_url, row.get('trace_id'))}",
        f'<dl>{dl}</dl><h2>Prompt</h2><pre id="prompt">{e(row.get("prompt") or "(none)")}</pre>',
    ]
    if screen is not None:
        parts.append(f'<h2>Terminal (live)</h2><pre id="output" class="terminal">{e(screen)}</pre>')
    else:
        parts.append(render_output(row))
    parts.append(render_came_from(row, meta))
    parts.append(render_left(meta))
    parts.append(render_deliveries(deliveries or []))
    parts.append(render_tool_calls(row.get("tool_calls") or []))
    return "".join(parts)


#: What a session's output is, by its status: only a session that succeeded answered.
OUTPUT_HEADINGS = {
    "succeeded": "Answer",
    "running": "Output so far",
    "pending": "Output",
}


def render_output(row: dict[str, Any]) -> str:
    """The session's output under what it is: an answer, or what a runtime printed and then
    failed (a CLI's "Not logged in" is no answer, and must not read as one)."""
    output = row.get("output") or ""
    heading = OUTPUT_HEADINGS.get(row["status"])
    if heading == "Answer" and is_builder(row):
        heading = "Output"  # a builder's last screen, not an answer to a prompt
    if heading is not None:
        return f'<h2>{heading}</h2><pre id="output">{e(output)}</pre>'
    if not output:
        return '<h2>Output</h2><p class="empty" id="output">None: the session gave no answer.</p>'
    return (
        "<h2>What the runtime printed before it stopped</h2>"
        f'<p class="empty">Not an answer: the session {e(row["status"])}; the reason is above.</p>'
        f'<pre id="output" class="not-an-answer">{e(output)}</pre>'
    )


#: The address of a web chat conversation, on the dashboard that runs it.
WEB_CHAT_LINK = "/chat/?c={id}"


def conversation_href(meta: dict[str, Any]) -> str | None:
    """Where the conversation a routed session answered is shown; None when it has none."""
    conversation = meta.get("conversation_id")
    if not isinstance(conversation, str) or not conversation:
        return None
    if meta.get("channel") == "web":
        return WEB_CHAT_LINK.format(id=quote(conversation, safe=""))
    url = meta.get("conversation_url")
    if isinstance(url, str) and url.startswith(("http://", "https://", "/")):
        return url
    return f"/conversations/{quote(conversation, safe='')}"


def render_came_from(row: dict[str, Any], meta: dict[str, Any]) -> str:
    """A routed session's origin: channel, sender, conversation (linked) and why this butler
    answered; nothing for another session."""
    if row.get("trigger_source") != "route" or not meta.get("channel"):
        return ""
    href = conversation_href(meta)
    conversation = meta.get("conversation_id")
    link = f'<a id="conversation-link" href="{e(href)}">{e(conversation)}</a>' if href else "—"
    fields = "".join(
        _field(name, meta.get(key))
        for name, key in (
            ("channel", "channel"),
            ("sender", "sender"),
            ("chat", "chat"),
            ("thread", "thread"),
            ("routed by", "routed_by"),
        )
    )
    return (
        '<section id="came-from"><h2>Where the message came from</h2>'
        f"<dl>{fields}<dt>conversation</dt><dd>{link}</dd></dl></section>"
    )


def render_left(meta: dict[str, Any]) -> str:
    """The repositories the session's runtime left where the owner's git runs, disarmed at
    its end (docs/security.md, "Repositories a session leaves"); nothing when none."""
    sandbox = meta.get("sandbox") if isinstance(meta.get("sandbox"), dict) else {}
    disarmed = [d for d in sandbox.get("disarmed") or [] if isinstance(d, dict)]
    missed = [line for line in sandbox.get("not_disarmed") or [] if isinstance(line, str)]
    if not disarmed and not missed:
        return ""
    items = [
        f"<li><code>{e(d.get('path'))}</code> renamed to <code>{e(d.get('now'))}</code></li>"
        for d in disarmed
    ]
    items += [f'<li class="error">{e(line)}</li>' for line in missed]
    return (
        '<section id="left-repositories"><h2>Repositories left behind</h2>'
        "<p>This session (or one running beside it) made git repositories where your own "
        "git runs. Each was disarmed, so no git obeys it; its config and hooks are the "
        "session's: read them before you rename it back.</p>"
        f"<ul>{''.join(items)}</ul></section>"
    )


def left_anything(row: dict[str, Any]) -> bool:
    """Whether the session left a repository the daemon disarmed (or could not)."""
    sandbox = (row.get("metadata") or {}).get("sandbox")
    return isinstance(sandbox, dict) and bool(
        sandbox.get("disarmed") or sandbox.get("not_disarmed")
    )


def render_tool_calls(calls: list[dict[str, Any]]) -> str:
    if not calls:
        return '<h2>Tool calls</h2><p class="empty" id="tool-calls">None recorded.</p>'
    rows = [
        f'<tr><td class="num">{i}</td><td><code>{e(c.get("name"))}</code></td>'
        f"<td><pre>{e(json.dumps(c.get('arguments'), indent=2, default=str))}</pre></td>"
        f"<td>{e(c.get('error'))}</td><td>{e(c.get('source'))}</td></tr>"
        for i, c in enumerate(calls, 1)
    ]
    head = ["#", "Tool", "Arguments", "Error", "Seen by"]
    return f'<h2>Tool calls ({len(calls)})</h2><div id="tool-calls">{table(head, rows)}</div>'
