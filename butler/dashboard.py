"""The butler's dashboard: sessions and builders at ``/``, one session at ``/sessions/<id>``.

Plain HTML rendered here, every value through :func:`html.escape`. The page
polls a JSON endpoint that carries the same HTML freshly rendered, so there
is one renderer and no build step. A builder's end is recorded by the
daemon's watcher as it happens, so reads only read.
"""

from __future__ import annotations

import html
import json
import uuid
from datetime import UTC, datetime, timedelta
from importlib import resources
from string import Template
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from butler.builders.modes import MODES
from butler.builders.records import elapsed_ms, is_builder, summary
from butler.store.sessions import parse_position, parse_timestamp
from butler.tools.context import ButlerContext
from butler.webterm.panel import terminal_panel

FINAL = ("succeeded", "failed", "cancelled", "ended")
LIST_LIMIT = 200
#: A change stamped before a reader's cursor but committed after it still reaches it.
CURSOR_OVERLAP = timedelta(seconds=1)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "object-src 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
ASSETS = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}


def e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute; None is empty."""
    return "" if value is None else html.escape(str(value), quote=True)


def _asset(name: str) -> str:
    return (resources.files("butler") / "assets" / name).read_text(encoding="utf-8")


# -- formatting -------------------------------------------------------------------------


def duration(row: dict[str, Any]) -> str:
    """How long a session ran, or has been running."""
    ms = row.get("duration_ms")
    if ms is None or row["status"] not in FINAL:
        ms = elapsed_ms(row) if row["status"] == "running" else None
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return (
        f"{minutes} m {secs:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} m"
    )


def tokens(row: dict[str, Any]) -> str:
    if row.get("input_tokens") is None and row.get("output_tokens") is None:
        return "—"
    return f"{row.get('input_tokens') or 0:,} in / {row.get('output_tokens') or 0:,} out"


def cost(row: dict[str, Any]) -> str:
    return "—" if row.get("cost_usd") is None else f"${row['cost_usd']:.4f}"


def when(value: str | None) -> str:
    return value[:19].replace("T", " ") if value else "—"


def first_line(text: str | None, limit: int = 120) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def status_cell(row: dict[str, Any]) -> str:
    status = e(row["status"])
    return f'<td class="status status-{status}" data-status="{status}">{status}</td>'


# -- the list -------------------------------------------------------------------------


def _table(head: list[str], rows: list[str]) -> str:
    cells = "".join(f"<th>{e(h)}</th>" for h in head)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def builder_row(row: dict[str, Any]) -> str:
    meta = row.get("metadata") or {}
    tag = ' <span class="tag">pruned</span>' if meta.get("pruned_at") else ""
    tag += ' <span class="tag">headless</span>' if meta.get("headless") else ""
    return (
        f'<tr data-session="{e(row["id"])}" data-builder="{e(meta.get("builder_id"))}">'
        f'<td><a href="/sessions/{e(row["id"])}">{e(meta.get("builder_id"))}</a>{tag}</td>'
        f'{status_cell(row)}<td class="what">{e(summary(row))}</td>'
        f"<td><code>{e(meta.get('branch'))}</code></td><td>{e(row['runtime'])}</td>"
        f'<td>{e(when(row.get("created_at")))}</td><td class="num">{e(duration(row))}</td>'
        f'<td class="num">{e(tokens(row))}</td><td class="num">{e(cost(row))}</td></tr>'
    )


def session_row(row: dict[str, Any]) -> str:
    return (
        f'<tr data-session="{e(row["id"])}">'
        f'<td><a href="/sessions/{e(row["id"])}"><code>{e(row["id"][:8])}</code></a></td>'
        f'{status_cell(row)}<td class="what">{e(first_line(row.get("prompt")))}</td>'
        f"<td>{e(row['runtime'])}</td><td>{e(when(row.get('created_at')))}</td>"
        f'<td class="num">{e(duration(row))}</td><td class="num">{e(tokens(row))}</td>'
        f'<td class="num">{e(cost(row))}</td></tr>'
    )


def render_list(rows: list[dict[str, Any]]) -> str:
    """Builders grouped by type, then other sessions grouped by type and trigger source."""
    builders = [r for r in rows if is_builder(r)]
    others = [r for r in rows if not is_builder(r)]
    head = ["Builder", "Status", "What", "Branch", "Runtime", "Started", "Duration"]
    parts = [f'<section id="builders"><h2>Builders ({len(builders)})</h2>']
    for mode in MODES:
        group = [r for r in builders if r["type"] == mode]
        if group:
            table = _table([*head, "Tokens", "Cost"], [builder_row(r) for r in group])
            parts.append(
                f'<div class="group" data-group="builder:{mode}"><h3>{e(mode)}</h3>{table}</div>'
            )
    if not builders:
        parts.append('<p class="empty">No builders yet: <code>butler spawn --help</code></p>')
    parts.append(f'</section><section id="sessions"><h2>Sessions ({len(others)})</h2>')
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in others:
        groups.setdefault((row["type"], row["trigger_source"]), []).append(row)
    head = ["Session", "Status", "Prompt", "Runtime", "Started", "Duration", "Tokens", "Cost"]
    for (kind, source), group in sorted(groups.items()):
        label = f"{kind} · {source}"
        table = _table(head, [session_row(r) for r in group])
        parts.append(f'<div class="group" data-group="{e(label)}"><h3>{e(label)}</h3>{table}</div>')
    if not others:
        parts.append('<p class="empty">No sessions yet.</p>')
    parts.append("</section>")
    return "".join(parts)


# -- one session ----------------------------------------------------------------------


def _field(name: str, value: Any) -> str:
    return f"<dt>{e(name)}</dt><dd>{e(value if value not in (None, '') else '—')}</dd>"


def render_detail(row: dict[str, Any], screen: str | None, config_dir: str) -> str:
    """Everything recorded about one session; a live builder's terminal as its output."""
    meta = row.get("metadata") or {}
    fields = [
        ("status", row["status"]), ("type", row["type"]),
        ("trigger source", row["trigger_source"]), ("runtime", row["runtime"]),
        ("model", row.get("model")), ("created", when(row.get("created_at"))),
        ("duration", duration(row)), ("tokens", tokens(row)), ("cost", cost(row)),
        ("error", row.get("error")),
    ]  # fmt: skip
    if is_builder(row):
        attach = f"butler attach {meta.get('builder_id')} --config {config_dir}"
        fields += [
            ("builder", meta.get("builder_id")), ("branch", meta.get("branch")),
            ("worktree", meta.get("worktree")), ("tmux session", meta.get("tmux_session")),
            ("attach", attach if screen is not None else None),
        ]  # fmt: skip
    dl = "".join(_field(name, value) for name, value in fields)
    status = e(row["status"])
    parts = [
        f'<p>Status: <span class="status status-{status}" data-status="{status}">'
        f"{status}</span></p>",
        f'<dl>{dl}</dl><h2>Prompt</h2><pre id="prompt">{e(row.get("prompt") or "(none)")}</pre>',
    ]
    if screen is not None:
        parts.append(f'<h2>Terminal (live)</h2><pre id="output" class="terminal">{e(screen)}</pre>')
    else:
        parts.append(f'<h2>Output</h2><pre id="output">{e(row.get("output") or "")}</pre>')
    parts.append(render_tool_calls(row.get("tool_calls") or []))
    return "".join(parts)


def render_tool_calls(calls: list[dict[str, Any]]) -> str:
    if not calls:
        return '<h2>Tool calls</h2><p class="empty" id="tool-calls">None recorded.</p>'
    rows = [
        f'<tr><td class="num">{i}</td><td><code>{e(c.get("name"))}</code></td>'
        f"<td><pre>{e(json.dumps(c.get('arguments'), indent=2, default=str))}</pre></td>"
        f"<td>{e(c.get('error'))}</td><td>{e(c.get('source'))}</td></tr>"
        for i, c in enumerate(calls, 1)
    ]
    table = _table(["#", "Tool", "Arguments", "Error", "Seen by"], rows)
    return f'<h2>Tool calls ({len(calls)})</h2><div id="tool-calls">{table}</div>'


# -- live updates and paging -------------------------------------------------------------


def listing_query(params: Any) -> tuple[datetime | None, tuple[datetime, uuid.UUID] | None]:
    """``since=<cursor>`` (changes only) and ``before=<created_at>,<id>`` (older page)."""
    since = parse_timestamp("since", params["since"]) if "since" in params else None
    before = parse_position("before", params["before"]) if "before" in params else None
    return since, before


# -- routes ---------------------------------------------------------------------------


def page(
    butler: ButlerContext,
    title: str,
    subtitle: str,
    source: str,
    body: str,
    final: bool,
    headers: dict[str, str] = SECURITY_HEADERS,
) -> HTMLResponse:
    text = Template(_asset("page.html")).substitute(
        title=e(title), butler=e(butler.config.name), subtitle=e(subtitle), source=e(source),
        runtime=e(butler.config.runtime.type), final="true" if final else "false", body=body,
        updated=e("rendered " + datetime.now(UTC).strftime("%H:%M:%S UTC")),
    )  # fmt: skip
    return HTMLResponse(text, headers=headers)


def dashboard_routes(butler: ButlerContext) -> list[Route]:
    """``/``, ``/sessions/<id>``, their JSON twins under ``/api`` and the two assets."""

    async def rows() -> list[dict[str, Any]]:
        return await butler.sessions.list(limit=LIST_LIMIT)

    async def detail(session_id: str) -> tuple[dict[str, Any] | None, str]:
        manager = butler.builders
        row = await butler.sessions.get(session_id)
        if row is None:
            return None, ""
        screen = await manager.screen(row)
        return row, render_detail(row, screen, str(butler.config.config_dir))

    async def index(_: Request) -> Response:
        body = render_list(await rows())
        return page(
            butler,
            f"{butler.config.name} · butler",
            "sessions and builders",
            "/api/sessions",
            body,
            False,
        )

    async def index_json(request: Request) -> Response:
        return await listing_json(butler, request)

    async def session(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        row, body = await detail(session_id)
        if row is None:
            return HTMLResponse(f"<p>No session {e(session_id)}.</p>", 404, SECURITY_HEADERS)
        source = f"/api/sessions/{row['id']}"
        final = row["status"] in FINAL
        panel = terminal_panel(row)  # a live builder's terminal (butler.webterm)
        title, subtitle = f"session {row['id'][:8]}", f"session {row['id']}"
        body += panel.html
        return page(butler, title, subtitle, source, body, final, panel.headers(SECURITY_HEADERS))

    async def session_json(request: Request) -> Response:
        row, body = await detail(request.path_params["session_id"])
        if row is None:
            return JSONResponse({"error": "no such session"}, 404, SECURITY_HEADERS)
        data = {"html": body, "final": row["status"] in FINAL, "status": row["status"]}
        return JSONResponse(data, headers=SECURITY_HEADERS)

    return [
        Route("/", index, methods=["GET"]),
        Route("/api/sessions", index_json, methods=["GET"]),
        Route("/sessions/{session_id}", session, methods=["GET"]),
        Route("/api/sessions/{session_id}", session_json, methods=["GET"]),
        Route("/assets/{name}", asset, methods=["GET"]),
    ]


async def listing_json(butler: ButlerContext, request: Request) -> Response:
    """The session list as JSON: whole (``before=`` pages) or only what changed (``since=``)."""
    try:
        since, before = listing_query(request.query_params)
    except ValueError as exc:
        return JSONResponse({"error": str(exc)}, 400, SECURITY_HEADERS)
    cursor = await butler.sessions.cursor()  # read first: no change slips between
    data: dict[str, Any] = {"final": False, "cursor": cursor.isoformat()}
    if since is not None:
        # Rows the page already shows are swapped in place; it asks for the whole
        # list only when one of these is new to it.
        changed = await butler.sessions.changed_since(since - CURSOR_OVERLAP, LIST_LIMIT)
        data["rows"] = {r["id"]: (builder_row if is_builder(r) else session_row)(r)
                        for r in changed}  # fmt: skip
    else:
        found = await butler.sessions.list(limit=LIST_LIMIT, before=before)
        data |= {"html": render_list(found), "count": len(found)}
    return JSONResponse(data, headers=SECURITY_HEADERS)


async def asset(request: Request) -> Response:
    """One of the dashboard's own static files; nothing else is served from here."""
    name = request.path_params["name"]
    if name not in ASSETS:
        return Response("not found", 404)
    return Response(_asset(name), media_type=ASSETS[name], headers=SECURITY_HEADERS)
