"""The roster page's workers: every `butler worker` serving one of its butlers.

Each butler's ``/api/summary`` lists the workers in its own schema (host,
butlers, capacity, running sessions, last heartbeat); a worker serving several
butlers is one line here, its running sessions summed (docs/scaling.md).
"""

from __future__ import annotations

from typing import Any

from butler.dashboard.render import e, table
from butler.store.workers import merge

HEAD = ["Worker", "Host", "Butlers", "Capacity", "Running", "Last heartbeat", "Status"]


def _clean(row: Any) -> dict[str, Any] | None:
    """A summary's worker row with the types the merge needs (a peer answered it)."""
    if not isinstance(row, dict) or not isinstance(row.get("name"), str):
        return None
    try:
        return {
            **row,
            "host": str(row.get("host") or ""),
            "running": int(row.get("running") or 0),
            "silent_s": float(row.get("silent_s") or 0.0),
            "butlers": [str(b) for b in row.get("butlers") or []][:64],
        }
    except (TypeError, ValueError):
        return None


def render_workers(summaries: list[dict[str, Any]]) -> str:
    """A Workers section, or a line saying how to start one."""
    listings = []
    for summary in summaries:
        found = summary.get("workers")
        if isinstance(found, list):
            listings.append([r for r in map(_clean, found) if r is not None])
    rows = [_row(r) for r in merge(listings)]
    if not rows:
        return (
            '<section id="workers"><h2>Workers</h2><p class="empty">No workers: sessions run '
            "in their butler's daemon (<code>butler worker --help</code>).</p></section>"
        )
    return f'<section id="workers"><h2>Workers ({len(rows)})</h2>{table(HEAD, rows)}</section>'


def _row(r: dict[str, Any]) -> str:
    status = e(r.get("status"))
    cells = [
        ("Host", "", e(r["host"])),
        ("Butlers", "", e(", ".join(r["butlers"]))),
        ("Capacity", 'class="num"', e(r.get("capacity"))),
        ("Running", 'class="num"', e(r["running"])),
        ("Last heartbeat", 'class="num"', e(f"{r['silent_s']:g} s ago")),
        ("Status", f'class="status status-{status}" data-status="{status}"', status),
    ]
    tds = "".join(f'<td {attrs} data-label="{label}">{text}</td>' for label, attrs, text in cells)
    return f'<tr data-worker="{e(r["name"])}"><th scope="row">{e(r["name"])}</th>{tds}</tr>'
