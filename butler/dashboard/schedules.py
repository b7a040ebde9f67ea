"""Schedules at ``/schedules``: cron, time zone, last and next fire, recent sessions, run now."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from butler.dashboard.forms import button
from butler.dashboard.params import BadParam, only
from butler.dashboard.render import SECURITY_HEADERS, Page, e, live, refused, table, when
from butler.dashboard.view import View, bad
from butler.errors import Rejected, UserError
from butler.store.session_search import SessionQuery, find_sessions

RECENT = 5


def moment(iso: str | None, zone: str) -> str:
    """``2026-11-27 08:00 Asia/Kolkata · 02:30 UTC``: the schedule's own clock first."""
    if not iso:
        return "never"
    utc = datetime.fromisoformat(iso)
    local = utc.astimezone(ZoneInfo(zone))
    return f"{local:%Y-%m-%d %H:%M} {zone} · {utc:%H:%M} UTC"


def _recent(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return '<span class="empty">no sessions yet</span>'
    items = []
    for row in rows:
        status = e(row["status"])
        items.append(
            f'<li data-session="{e(row["id"])}"><a href="/sessions/{e(row["id"])}">'
            f"{e(when(row.get('created_at')))}</a> "
            f'<span class="status status-{status}" data-status="{status}">{status}</span></li>'
        )
    return f'<ul class="recent">{"".join(items)}</ul>'


def _row(entry: dict[str, Any], recent: str, token: str) -> str:
    zone, name = entry["timezone"], entry["name"]
    via = f" ({e(entry['last_fired_via'])})" if entry.get("last_fired_via") else ""
    run = button(f"/schedules/{quote(name, safe='')}/run", "Run now", token, "run-now")
    return (
        f'<tr data-schedule="{e(name)}"><th scope="row">{e(name)}</th>'
        f"<td><code>{e(entry['cron'])}</code></td><td>{e(zone)}</td>"
        f'<td class="last">{e(moment(entry["last_fired"], zone))}{via}</td>'
        f'<td class="next" data-utc="{e(entry["next_due"])}">'
        f"{e(moment(entry['next_due'], zone))}</td>"
        f'<td class="what">{e(entry["prompt"])}</td><td>{recent}</td><td>{run}</td></tr>'
    )


def render_schedules(entries: list[dict[str, Any]], recent: dict[str, str], token: str) -> str:
    """One row per schedule; the owner's "run now" button on each."""
    if not entries:
        return '<p class="empty">No schedules: add [[butler.schedule]] to butler.toml.</p>'
    rows = [_row(s, recent[s["name"]], token) for s in entries]
    head = ["Schedule", "Cron", "Time zone", "Last fire", "Next fire", "Prompt", "Recent", ""]
    return f'<section id="schedules">{table(head, rows)}</section>'


def schedule_routes(view: View) -> list[Route]:
    """``/schedules``, its live twin, and ``POST /schedules/<name>/run``."""
    butler = view.butler

    async def body() -> str:
        entries = await butler.scheduler.listing() if butler.scheduler else []
        recent = {}
        for entry in entries:
            query = SessionQuery(trigger_source=f"schedule:{entry['name']}")
            recent[entry["name"]] = _recent(await find_sessions(butler.db, query, RECENT))
        return render_schedules(entries, recent, view.owner_token)

    async def schedules(request: Request) -> Response:
        try:
            only(request.query_params, ())
        except BadParam as exc:
            return await view.refused_page(str(exc), 400, "/schedules")
        return await view.page(
            Page(
                title=f"{butler.config.name} · schedules",
                subtitle="schedules",
                source="/api/schedules",
                body=await body(),
                current="/schedules",
            )
        )

    async def schedules_json(request: Request) -> Response:
        try:
            only(request.query_params, ("since",))  # the page's script may send its cursor
        except BadParam as exc:
            return bad(exc)
        return live(await body())

    async def run_now(request: Request) -> Response:
        refusal = await view.posted(request)
        if refusal is not None:
            return refusal
        if butler.scheduler is None:
            return refused("schedule: this butler runs no schedules", 404)
        try:
            await butler.scheduler.run_now(request.path_params["name"][:100])
        except Rejected as exc:  # not admitted: nothing ran, nothing recorded as fired
            return refused(f"schedule: {exc}", 409)
        except UserError as exc:
            return refused(f"schedule: {exc}", 404)
        return RedirectResponse("/schedules", 303, headers=SECURITY_HEADERS)

    return [
        Route("/schedules", schedules, methods=["GET"]),
        Route("/api/schedules", schedules_json, methods=["GET"]),
        Route("/schedules/{name}/run", run_now, methods=["POST"]),
    ]
