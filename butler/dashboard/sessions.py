"""The session list at ``/``: builders and sessions, found by filters, search and pages."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from butler.builders.modes import MODES
from butler.builders.records import is_builder, summary
from butler.dashboard.detail import left_anything
from butler.dashboard.render import (
    cell,
    cost,
    duration,
    e,
    first_line,
    ran_on,
    status_cell,
    table,
    tokens,
    when,
)
from butler.store.session_ids import short
from butler.store.sessions import STATUSES, position

#: The session table's columns; the error's first line says why a failed one failed.
SESSION_COLUMNS = (
    "Session",
    "Status",
    "Prompt",
    "Error",
    "Runtime",
    "Ran on",
    "Started",
    "Duration",
    "Tokens",
    "Cost",
)


#: The builder table's columns.
BUILDER_COLUMNS = (
    "Builder",
    "Status",
    "What",
    "Branch",
    "Runtime",
    "Started",
    "Duration",
    "Tokens",
    "Cost",
)
#: The tag of a session that left a repository the daemon disarmed.
LEFT_TAG = ' <span class="tag warn" title="see its page">left a repository</span>'


def builder_row(row: dict[str, Any]) -> str:
    meta = row.get("metadata") or {}
    tag = ' <span class="tag">pruned</span>' if meta.get("pruned_at") else ""
    tag += ' <span class="tag">headless</span>' if meta.get("headless") else ""
    tag += LEFT_TAG if left_anything(row) else ""
    link = f'<a href="/sessions/{e(row["id"])}">{e(meta.get("builder_id"))}</a>{tag}'
    branch = f"<code>{e(meta.get('branch'))}</code>"
    return (
        f'<tr data-session="{e(row["id"])}" data-builder="{e(meta.get("builder_id"))}">'
        f"{cell('Builder', link, 'id')}{status_cell(row)}"
        f"{cell('What', e(summary(row)), 'what')}"
        f"{cell('Branch', branch)}"
        f"{cell('Runtime', e(row['runtime']))}"
        f"{cell('Started', e(when(row.get('created_at'))), 'when')}"
        f"{cell('Duration', e(duration(row)), 'num')}{cell('Tokens', e(tokens(row)), 'num')}"
        f"{cell('Cost', e(cost(row)), 'num')}</tr>"
    )


def session_row(row: dict[str, Any]) -> str:
    link = f'<a href="/sessions/{e(row["id"])}"><code>{e(short(row["id"]))}</code></a>'
    link += LEFT_TAG if left_anything(row) else ""
    return (
        f'<tr data-session="{e(row["id"])}">'
        f"{cell('Session', link, 'id')}{status_cell(row)}"
        f"{cell('Prompt', e(first_line(row.get('prompt'))), 'what')}"
        f"{cell('Error', e(first_line(row.get('error'))), 'error')}"
        f"{cell('Runtime', e(row['runtime']))}{cell('Ran on', e(ran_on(row)), 'ran-on')}"
        f"{cell('Started', e(when(row.get('created_at'))), 'when')}"
        f"{cell('Duration', e(duration(row)), 'num')}{cell('Tokens', e(tokens(row)), 'num')}"
        f"{cell('Cost', e(cost(row)), 'num')}</tr>"
    )


def any_row(row: dict[str, Any]) -> str:
    """A row as the list shows it (a builder's or a session's)."""
    return (builder_row if is_builder(row) else session_row)(row)


def render_list(rows: list[dict[str, Any]]) -> str:
    """Builders grouped by type, then other sessions grouped by type and trigger source."""
    builders = [r for r in rows if is_builder(r)]
    others = [r for r in rows if not is_builder(r)]
    parts = [f'<section id="builders"><h2>Builders ({len(builders)})</h2>']
    for mode in MODES:
        group = [r for r in builders if r["type"] == mode]
        if group:
            rows_html = [builder_row(r) for r in group]
            parts.append(
                f'<div class="group" data-group="builder:{mode}"><h3>{e(mode)}</h3>'
                f"{table(list(BUILDER_COLUMNS), rows_html, cards=True)}</div>"
            )
    if not builders:
        hint = "<code>butler builders spawn --help</code>"
        parts.append(f'<p class="empty">No builders yet: {hint}</p>')
    parts.append(f'</section><section id="sessions"><h2>Sessions ({len(others)})</h2>')
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in others:
        groups.setdefault((row["type"], row["trigger_source"]), []).append(row)
    head = list(SESSION_COLUMNS)
    for (kind, source), group in sorted(groups.items()):
        label = f"{kind} · {source}"
        rows_html = [session_row(r) for r in group]
        parts.append(
            f'<div class="group" data-group="{e(label)}"><h3>{e(label)}</h3>'
            f"{table(head, rows_html, cards=True)}</div>"
        )
    if not others:
        parts.append('<p class="empty">No sessions match.</p>')
    parts.append("</section>")
    return "".join(parts)


def matches(count: int, cap: int) -> str:
    """How many sessions a search or filter found, on every page of it."""
    shown = f"{cap:,}+ matches" if count > cap else f"{count:,} match{'es' if count != 1 else ''}"
    return f'<p class="matches" id="matches" role="status">{shown}</p>'


def pager(params: dict[str, str], rows: list[dict[str, Any]], limit: int) -> str:
    """Links to the newest page and to the page after the last row shown."""
    kept = {k: v for k, v in params.items() if k not in ("before", "since") and v}
    links = []
    if params.get("before"):
        links.append(f'<a id="newest" href="/?{e(urlencode(kept))}">Newest</a>')
    if len(rows) == limit:
        older = urlencode({**kept, "before": position(rows[-1])})
        links.append(f'<a id="older" href="/?{e(older)}" rel="next">Older →</a>')
    return f'<nav class="pager" aria-label="pages">{"".join(links)}</nav>' if links else ""


def _select(name: str, label: str, choices: list[str], chosen: str) -> str:
    options = ['<option value="">any</option>'] + [
        f"<option{' selected' if c == chosen else ''}>{e(c)}</option>" for c in choices
    ]
    return f'<label>{e(label)} <select name="{name}">{"".join(options)}</select></label>'


def filter_form(params: dict[str, str], choices: dict[str, list[str]]) -> str:
    """The filters and search box above the list (outside the live part, so typing survives)."""
    fields = [
        f'<label class="search">Search <input type="search" name="q" id="q" maxlength="200"'
        f' value="{e(params.get("q", ""))}" placeholder="words in prompt or output"'
        ' accesskey="s"></label>',
        _select("status", "Status", list(STATUSES), params.get("status", "")),
        _select("source", "Source", choices["trigger_source"], params.get("source", "")),
        _select("runtime", "Runtime", choices["runtime"], params.get("runtime", "")),
        _select("type", "Type", choices["type"], params.get("type", "")),
        f'<label>From <input type="date" name="from" value="{e(params.get("from", ""))}"></label>',
        f'<label>To <input type="date" name="to" value="{e(params.get("to", ""))}"></label>',
    ]
    if params.get("limit"):
        fields.append(f'<input type="hidden" name="limit" value="{e(params["limit"])}">')
    return (
        f'<form id="filters" class="filters" method="get" action="/" role="search">'
        f'{"".join(fields)}<button type="submit">Find</button> <a href="/">clear</a></form>'
    )
