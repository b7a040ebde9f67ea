"""Messages to the person: a session's on its page, and every butler's at ``/deliveries``.

Each is a row per channel with every attempt; one held, refused or merged into
a quiet-hours digest says so and why. The roster-wide page lists the latest of
every butler of this process, each linked to the session that sent it.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from butler.dashboard.params import BadParam, only
from butler.dashboard.render import Page, e, live, table, when
from butler.dashboard.view import View, bad

#: Statuses of a delivery still to be sent: the page keeps polling while one is open.
OPEN = ("held", "pending", "sending")


def still_open(deliveries: list[dict[str, Any]]) -> bool:
    """Whether a delivery of the session may still change."""
    return any(d["status"] in OPEN for d in deliveries)


def _attempts(delivery: dict[str, Any]) -> str:
    lines = [
        f"{e(when(a.get('at')))} · "
        + ("delivered" if a.get("delivered") else f"not delivered: {e(a.get('error') or '')}")
        for a in delivery.get("attempts") or []
    ]
    if delivery["status"] == "held":
        lines.append(f"held for quiet hours until {e(when(delivery.get('next_at')))}")
    elif delivery["status"] == "pending" and delivery.get("next_at"):
        lines.append(f"next attempt at {e(when(delivery.get('next_at')))}")
    elif delivery["status"] in ("refused", "merged"):
        lines.append(e(delivery.get("error") or delivery["status"]))
    return "<br>".join(lines) or "—"


def render_deliveries(deliveries: list[dict[str, Any]]) -> str:
    """The session's deliveries as a table, or a line saying there were none."""
    if not deliveries:
        return '<h2>Sent to the person</h2><p class="empty" id="deliveries">Nothing sent.</p>'
    rows = [
        f'<tr data-delivery="{e(d["id"])}" data-status="{e(d["status"])}">'
        f"<td><code>{e(d['channel'])}</code></td><td>{e(d['title'])}</td>"
        f"<td>{e(d['priority'])}</td><td>{e(d['source'])}</td>"
        f'<td><span class="status status-{e(d["status"])}">{e(d["status"])}</span></td>'
        f"<td>{_attempts(d)}</td></tr>"
        for d in deliveries
    ]
    head = ["Channel", "Title", "Priority", "Source", "Status", "Attempts"]
    return (
        f"<h2>Sent to the person ({len(deliveries)})</h2>"
        f'<div id="deliveries">{table(head, rows)}</div>'
    )


#: Deliveries the roster-wide page shows, the latest of every butler together.
RECENT = 200


def render_all(rows: list[dict[str, Any]]) -> str:
    """Every butler's latest deliveries, newest first, each with its butler and session."""
    if not rows:
        return '<p class="empty" id="deliveries">Nothing sent yet.</p>'
    lines = []
    for d in rows:
        session = d.get("session_id")
        link = (
            f'<a href="{e(d["dashboard"])}/sessions/{e(session)}">{e(str(session)[:8])}</a>'
            if session
            else "—"
        )
        lines.append(
            f'<tr data-delivery="{e(d["id"])}" data-status="{e(d["status"])}">'
            f"<td>{e(when(d.get('created_at')))}</td><td>{e(d['butler'])}</td>"
            f"<td><code>{e(d['channel'])}</code></td><td>{e(d['title'])}</td>"
            f"<td>{e(d['source'])}</td>"
            f'<td><span class="status status-{e(d["status"])}">{e(d["status"])}</span></td>'
            f"<td>{_attempts(d)}</td><td>{link}</td></tr>"
        )
    head = ["When", "Butler", "Channel", "Title", "Source", "Status", "Attempts", "Session"]
    return f'<div id="deliveries">{table(head, lines)}</div>'


def delivery_routes(view: View) -> list[Route]:
    """``/deliveries``: what every butler of this process sent, held or refused."""
    butler = view.butler

    async def body(request: Request) -> str:
        only(request.query_params, ("since",))
        found: list[dict[str, Any]] = []
        for peer in butler.peers or [butler]:
            for row in await peer.notifier.store.recent(RECENT):
                row["butler"], row["dashboard"] = peer.config.name, peer.config.mcp_base_url
                found.append(row)
        found.sort(key=lambda r: str(r.get("created_at") or ""), reverse=True)
        return render_all(found[:RECENT])

    async def page(request: Request) -> Response:
        try:
            html = await body(request)
        except BadParam as exc:
            return await view.refused_page(str(exc), 400, "/deliveries")
        return await view.page(
            Page(
                title=f"{butler.config.name} · deliveries",
                subtitle="messages to the person from every butler: sent, held, refused",
                source="/api/deliveries",
                body=html,
                current="/deliveries",
            )
        )

    async def page_json(request: Request) -> Response:
        try:
            return live(await body(request))
        except BadParam as exc:
            return bad(exc)

    return [
        Route("/deliveries", page, methods=["GET"]),
        Route("/api/deliveries", page_json, methods=["GET"]),
    ]
