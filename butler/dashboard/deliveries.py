"""A session's messages to the person, on its page: each channel, each attempt."""

from __future__ import annotations

from typing import Any

from butler.dashboard.render import e, table, when

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
