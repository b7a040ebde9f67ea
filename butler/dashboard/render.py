"""What every dashboard view shares: escaping, number formats, tables and the page frame.

Plain HTML rendered on the server, every value through :func:`e`. A page
polls a JSON twin that carries the same HTML freshly rendered, so there is one
renderer and no build step. The Content-Security-Policy allows only the
dashboard's own script and stylesheet: no inline script, style or CDN.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from string import Template
from typing import Any

from starlette.responses import HTMLResponse, JSONResponse, Response

from butler.spawner.endings import elapsed_ms

FINAL = ("succeeded", "failed", "cancelled", "ended")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    # "same-origin", not "no-referrer": under no-referrer a browser sends "Origin: null"
    # on the dashboard's own form posts, which the form check must then refuse.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
ASSETS = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}
#: The views every butler's header links to, in order.
NAV = (("/", "Sessions"), ("/charts", "Charts"), ("/schedules", "Schedules"),
       ("/state", "State"), ("/conversations", "Conversations"),
       ("/deliveries", "Deliveries"), ("/roster", "Roster"), ("/chat/", "Chat"))  # fmt: skip


def e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute; None is empty."""
    return "" if value is None else html.escape(str(value), quote=True)


def asset_text(name: str) -> str:
    """One of the files in ``butler/assets``."""
    return (resources.files("butler") / "assets" / name).read_text(encoding="utf-8")


def duration_ms(ms: float | None) -> str:
    """A duration for people: 850 ms, 4.2 s, 3 m 05 s, 1 h 02 m."""
    if ms is None:
        return "—"
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return (
        f"{minutes} m {secs:02d} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} m"
    )


def duration(row: dict[str, Any]) -> str:
    """How long a session ran, or has been running."""
    ms = row.get("duration_ms")
    if ms is None or row["status"] not in FINAL:
        ms = elapsed_ms(row) if row["status"] == "running" else None
    return duration_ms(ms)


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
    return (
        f'<td class="status status-{status}" data-status="{status}" data-label="Status">'
        f"{status}</td>"
    )


def cell(label: str, inner: str, css: str = "") -> str:
    """A table cell (``inner`` already HTML) that names its column when shown as a card."""
    kind = f' class="{css}"' if css else ""
    return f'<td{kind} data-label="{e(label)}">{inner}</td>'


def table(head: list[str], rows: list[str], label: str = "", *, cards: bool = False) -> str:
    """A table; with ``cards``, each row reads as a card of labelled lines on a phone."""
    cells = "".join(f'<th scope="col">{e(h)}</th>' for h in head)
    caption = f"<caption>{e(label)}</caption>" if label else ""
    kind = ' class="cards"' if cards else ""
    return (
        f'<div class="scroll"><table{kind}>{caption}<thead><tr>{cells}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def nav(current: str, views: tuple[tuple[str, str], ...] = NAV) -> str:
    mark = ' aria-current="page"'
    links = [
        f'<a href="{path}"{mark if path == current else ""}>{e(label)}</a>' for path, label in views
    ]
    return f'<nav aria-label="views">{"".join(links)}</nav>'


@dataclass(frozen=True)
class Page:
    """One view's page: its body and what the frame around it shows."""

    title: str
    subtitle: str
    #: The JSON twin the page's script polls for a fresh body.
    source: str
    body: str
    #: The view's own path, marked in the navigation.
    current: str = ""
    #: Forms above the body (filters, date ranges).
    controls: str = ""
    #: True once nothing on the page changes any more (a finished session): no polling.
    final: bool = False
    views: tuple[tuple[str, str], ...] = NAV
    #: The line under the butler's name; its runtime when None.
    meta: str | None = None
    #: The response's headers; the security headers when None.
    headers: Mapping[str, str] | None = None
    #: What is wrong with the butler as a whole (HTML), shown above every view.
    banner: str = ""


def page(butler: str, runtime: str, view: Page) -> HTMLResponse:
    """The page frame of butler ``butler`` (running ``runtime``) around ``view``."""
    meta = e(view.meta) if view.meta is not None else f"runtime <b>{e(runtime)}</b>"
    text = Template(asset_text("page.html")).substitute(
        title=e(view.title),
        butler=e(butler),
        subtitle=e(view.subtitle),
        source=e(view.source),
        meta=meta,
        final="true" if view.final else "false",
        body=view.body,
        nav=nav(view.current, view.views),
        controls=view.controls,
        banner=view.banner,
        updated=e("rendered " + datetime.now(UTC).strftime("%H:%M:%S UTC")),
    )
    return HTMLResponse(text, headers=dict(view.headers or SECURITY_HEADERS))


def refused(line: str, status: int = 400, *, json: bool = False) -> Response:
    """One line that says what was wrong: JSON for the ``/api`` twins, text for pages."""
    if json:
        return JSONResponse({"error": line}, status, SECURITY_HEADERS)
    headers = {**SECURITY_HEADERS, "Content-Type": "text/plain; charset=utf-8"}
    return Response(line + "\n", status, headers=headers)


def live(html_text: str, final: bool = False, **extra: Any) -> JSONResponse:
    """A view's JSON twin: its body re-rendered, for the page's script to swap in."""
    return JSONResponse({"html": html_text, "final": final, **extra}, headers=SECURITY_HEADERS)


def ran_on(row: dict[str, Any]) -> str:
    """Where a session's runtime ran: the worker that picked it, else the daemon itself."""
    worker = (row.get("metadata") or {}).get("worker")
    if worker:
        return str(worker)[:200]  # a worker wrote it: shown as data, bounded
    return "—" if row.get("status") == "pending" else "local"
