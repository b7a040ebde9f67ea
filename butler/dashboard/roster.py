"""The roster at ``/roster``: every butler on one line, what it did and cost today, what is next.

Each butler answers ``/api/summary`` about itself. Under ``butler up`` the
page reads its peers in-process; ``butler dashboard --roster DIR``
(:mod:`butler.dashboard.standalone`) asks each separately started butler
over HTTP with its owner token.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from butler.context import ButlerContext
from butler.dashboard.charts import day_range, ranges
from butler.dashboard.params import BadParam, chart_days
from butler.dashboard.render import SECURITY_HEADERS, Page, e, live, table
from butler.dashboard.roster_charts import daily_series, render_butler_charts
from butler.dashboard.roster_workers import render_workers
from butler.dashboard.schedules import moment
from butler.dashboard.view import View, bad
from butler.security.login import mint_ticket
from butler.security.owner_token import owner_token
from butler.store.session_days import daily
from butler.store.workers import WorkerRows


async def summary(butler: ButlerContext, days: int = 7) -> dict[str, Any]:
    """What the roster shows of one butler; ``/api/summary`` answers it.

    ``daily`` holds a figure per day of the last ``days`` (7, 30 or 90) that had a
    session, for the roster's charts: bounded by ``days`` whatever the history.
    """
    config = butler.config
    today = datetime.now(UTC).date()
    first = today - timedelta(days=max(days, 7) - 1)
    counts = (await daily(butler.db, first))["counts"]
    week = [r for r in counts if r["day"] > today - timedelta(days=7)]
    figures = [r for r in week if r["day"] == today]
    upcoming = await butler.scheduler.listing() if butler.scheduler else []
    upcoming.sort(key=lambda s: s["next_due"])
    return {
        "name": config.name,
        "url": config.mcp_base_url,
        "status": "up" if await butler.db.ping() else "degraded",
        "runtime": config.runtime.type,
        "sandbox": butler.spawner.sandbox,
        "sessions_today": sum(r["sessions"] for r in figures),
        "failures_today": sum(r["sessions"] for r in figures if r["status"] == "failed"),
        "spend_today": round(sum(r["cost_usd"] for r in figures), 6),
        "sessions_week": sum(r["sessions"] for r in week),
        "spend_week": round(sum(r["cost_usd"] for r in week), 6),
        "next_schedule": {k: upcoming[0][k] for k in ("name", "next_due", "timezone")}
        if upcoming
        else None,
        "daily": daily_series(counts, today - timedelta(days=days - 1)),
        "channels": butler.channels.states() if butler.channels else [],
        "workers": await _workers(butler),
    }


async def _workers(butler: ButlerContext) -> list[dict[str, Any]]:
    """The workers serving this butler; none shown while the database is away."""
    try:
        return await WorkerRows(butler.db).listing()
    except Exception:  # the status column already says the database is down
        return []


def _next(entry: dict[str, Any] | None) -> str:
    if not entry:
        return "—"
    return f"{entry['name']}: {moment(entry['next_due'], entry['timezone'])}"


def _row(s: dict[str, Any]) -> str:
    status = e(s["status"])
    spend, spend_week = (
        f"${s[k]:.2f}" if s.get(k) is not None else "—" for k in ("spend_today", "spend_week")
    )
    cells = [
        ("Status", f'class="status status-{status}" data-status="{status}"', status),
        ("Runtime", "", e(s.get("runtime") or "—")),
        ("Sandbox", "", e(s.get("sandbox") or "—")),
        ("Sessions today", 'class="num"', e(s.get("sessions_today", "—"))),
        ("Failures today", 'class="num"', e(s.get("failures_today", "—"))),
        ("Spend today", 'class="num"', e(spend)),
        ("Sessions 7 days", 'class="num"', e(s.get("sessions_week", "—"))),
        ("Spend 7 days", 'class="num"', e(spend_week)),
        ("Next schedule", "", e(_next(s.get("next_schedule")))),
        ("Channels", "", _channels(s.get("channels"))),
    ]
    # data-label: on a phone each row becomes a card whose cells say what they are.
    tds = "".join(f'<td {attrs} data-label="{label}">{text}</td>' for label, attrs, text in cells)
    return (
        f'<tr data-butler="{e(s["name"])}"><th scope="row"><a href="{e(_link(s))}">'
        f"{e(s['name'])}</a></th>{tds}</tr>"
    )


def _link(s: dict[str, Any]) -> str:
    """The butler's dashboard; with a one-time ticket, its link logs the browser in there too."""
    login = s.get("login")
    return login if isinstance(login, str) and login.startswith(s["url"]) else f"{s['url']}/"


def _channels(found: Any) -> str:
    """Each chat channel and its state; a link to the conversations of the butler keeping it."""
    if not isinstance(found, list) or not found:
        return "—"
    return ", ".join(
        f'<span class="channel" data-status="{e(c.get("status"))}">{e(c.get("channel"))} '
        f"{e(c.get('status'))}</span>"
        for c in found
        if isinstance(c, dict)
    )


def render_roster(summaries: list[dict[str, Any]], days: list[date]) -> str:
    """One row per butler and a total of today's and the week's sessions, failures and spend,
    then sessions, tokens and cost per day by butler over ``days``."""
    known = [s for s in summaries if s.get("sessions_today") is not None]
    sums = {
        "Sessions today": sum(s["sessions_today"] for s in known),
        "Failures today": sum(s["failures_today"] for s in known),
        "Spend today": f"${sum(s['spend_today'] for s in known):.2f}",
        "Sessions 7 days": sum(s.get("sessions_week", 0) for s in known),
        "Spend 7 days": f"${sum(s.get('spend_week', 0) for s in known):.2f}",
    }
    cells = "".join(f'<td class="num" data-label="{k}">{v}</td>' for k, v in sums.items())
    total = (
        f'<tr class="total"><th scope="row">all {len(summaries)}</th><td></td><td></td><td></td>'
        f"{cells}<td></td><td></td></tr>"
    )
    head = ["Butler", "Status", "Runtime", "Sandbox", "Sessions today", "Failures today",
            "Spend today", "Sessions 7 days", "Spend 7 days", "Next schedule",
            "Channels"]  # fmt: skip
    rows = [_row(s) for s in summaries] + [total]
    caption = "Today and the last 7 days (UTC)"
    charts = render_butler_charts(summaries, days)
    workers = render_workers(summaries)
    return f'<section id="roster">{table(head, rows, caption)}</section>{workers}{charts}'


def roster_routes(view: View) -> list[Route]:
    """``/roster`` (this process's butlers), its live twin, and ``/api/summary``."""
    butler = view.butler

    async def body(days: int) -> str:
        summaries = []
        for peer in butler.peers or [butler]:
            found = await summary(peer, days)
            if peer is not butler:  # one login for the roster: the link logs in there too
                ticket = mint_ticket(owner_token(peer.config), peer.config.name)
                found["login"] = f"{found['url']}/?ticket={ticket}"
            summaries.append(found)
        return render_roster(summaries, day_range(days))

    async def roster(request: Request) -> Response:
        try:
            days = chart_days(request.query_params, ("days",), default=7)
        except BadParam as exc:
            return await view.refused_page(str(exc), 400, "/roster")
        return await view.page(
            Page(
                title=f"{butler.config.name} · roster",
                subtitle="every butler of this process",
                source=f"/api/roster?days={days}",
                body=await body(days),
                current="/roster",
                controls=ranges(days, "/roster"),
            )
        )

    async def roster_json(request: Request) -> Response:
        try:  # the page's script may send its cursor
            days = chart_days(request.query_params, ("days", "since"), default=7)
        except BadParam as exc:
            return bad(exc)
        return live(await body(days))

    async def summary_json(request: Request) -> Response:
        try:
            days = chart_days(request.query_params, ("days",), default=7)
        except BadParam as exc:
            return bad(exc)
        return JSONResponse(await summary(butler, days), headers=SECURITY_HEADERS)

    return [
        Route("/roster", roster, methods=["GET"]),
        Route("/api/roster", roster_json, methods=["GET"]),
        Route("/api/summary", summary_json, methods=["GET"]),
    ]
