"""Charts at ``/charts``: inline SVG drawn on the server from the per-day figures.

No script library and no CDN: each bar or point is an SVG element carrying
its day, series and value (``data-*``) and a ``<title>`` a screen reader or a
mouse can read, so the CSP stays strict and the numbers stay checkable.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from butler.dashboard.params import CHART_DAYS, BadParam, chart_days
from butler.dashboard.render import Page, duration_ms, e, live
from butler.dashboard.view import View, bad
from butler.store.session_days import daily
from butler.store.sessions import STATUSES

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 180, 56, 22, 8
Series = dict[str, dict[date, float]]


def day_range(days: int, today: date | None = None) -> list[date]:
    """The last ``days`` UTC days, oldest first, ending today."""
    today = today or datetime.now(UTC).date()
    return [today - timedelta(days=days - 1 - i) for i in range(days)]


def _frame(days: list[date], top: float, label: Callable[[float], str]) -> str:
    base = HEIGHT - BOTTOM
    return (
        f'<line class="axis" x1="{LEFT}" y1="{base}" x2="{WIDTH}" y2="{base}"/>'
        f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{e(label(top))}</text>'
        f'<text x="{LEFT - 4}" y="{base}" text-anchor="end">0</text>'
        f'<text x="{LEFT}" y="{HEIGHT - 6}">{days[0]:%b %d}</text>'
        f'<text x="{WIDTH}" y="{HEIGHT - 6}" text-anchor="end">{days[-1]:%b %d}</text>'
    )


def _legend(keys: Sequence[str], css: Callable[[str], str]) -> str:
    items = "".join(f'<li><i class="{css(k)}"></i>{e(k)}</li>' for k in keys)
    return f'<ul class="legend">{items}</ul>'


def stacked_bars(
    name: str,
    title: str,
    days: list[date],
    series: Series,
    css: Callable[[str], str],
    label: Callable[[float], str],
) -> str:
    """Bars per day, one segment per series key, heights proportional to the values."""
    totals = [sum(s.get(d, 0) for s in series.values()) for d in days]
    top = max(totals, default=0) or 1
    step = (WIDTH - LEFT) / len(days)
    scale = (HEIGHT - BOTTOM - TOP) / top
    bars = []
    for i, day in enumerate(days):
        y = HEIGHT - BOTTOM
        for key, values in series.items():
            value = values.get(day, 0)
            if not value:
                continue
            h = value * scale
            y -= h
            bars.append(
                f'<rect class="{css(key)}" x="{LEFT + i * step + 1:.2f}" y="{y:.2f}"'
                f' width="{max(step - 2, 1):.2f}" height="{h:.2f}" data-day="{day}"'
                f' data-key="{e(key)}" data-value="{value:g}">'
                f"<title>{day} {e(key)}: {e(label(value))}</title></rect>"
            )
    svg = (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{e(title)}"'
        f' data-top="{top:g}" data-scale="{scale:.6f}">{_frame(days, top, label)}'
        f"{''.join(bars)}</svg>"
    )
    return (
        f'<figure id="{name}"><figcaption>{e(title)}</figcaption>{svg}'
        f"{_legend(list(series), css)}</figure>"
    )


def lines(name: str, title: str, days: list[date], series: Series) -> str:
    """A line per series (here p50 and p95 duration), a point per day that has a value."""
    top = max((v for s in series.values() for v in s.values()), default=0) or 1
    step = (WIDTH - LEFT) / len(days)
    scale = (HEIGHT - BOTTOM - TOP) / top
    drawn = []
    for key, values in series.items():
        points = [
            (LEFT + (i + 0.5) * step, HEIGHT - BOTTOM - values[d] * scale, d, values[d])
            for i, d in enumerate(days)
            if d in values
        ]
        path = " ".join(f"{x:.2f},{y:.2f}" for x, y, _, _ in points)
        drawn.append(f'<polyline class="k-{key}" points="{path}"/>')
        drawn += [
            f'<circle class="k-{key}" cx="{x:.2f}" cy="{y:.2f}" r="3" data-day="{d}"'
            f' data-key="{key}" data-value="{v:g}"><title>{d} {key}: {duration_ms(v)}</title>'
            "</circle>"
            for x, y, d, v in points
        ]
    svg = (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{e(title)}"'
        f' data-top="{top:g}" data-scale="{scale:.6f}">{_frame(days, top, duration_ms)}'
        f"{''.join(drawn)}</svg>"
    )
    legend = _legend(list(series), lambda k: f"k-{k}")
    return f'<figure id="{name}"><figcaption>{e(title)}</figcaption>{svg}{legend}</figure>'


def render_charts(figures: dict[str, list[dict[str, Any]]], days: list[date]) -> str:
    """The four charts over ``days`` from :func:`butler.store.session_days.daily` figures."""
    by_status: Series = {s: {} for s in STATUSES}
    tokens: Series = defaultdict(dict)
    spend: Series = defaultdict(dict)
    for row in figures["counts"]:
        day = row["day"]
        by_status[row["status"]][day] = by_status[row["status"]].get(day, 0) + row["sessions"]
        used = row["input_tokens"] + row["output_tokens"]
        tokens[row["runtime"]][day] = tokens[row["runtime"]].get(day, 0) + used
        spend[row["runtime"]][day] = spend[row["runtime"]].get(day, 0) + row["cost_usd"]
    runtimes = sorted(set(tokens))

    def runtime_css(key: str) -> str:
        return f"k-{runtimes.index(key) % 6}"

    durations: Series = {"p50": {}, "p95": {}}
    for row in figures["durations"]:
        for key in ("p50", "p95"):
            if row[f"{key}_ms"] is not None:
                durations[key][row["day"]] = row[f"{key}_ms"]
    statuses = {k: v for k, v in by_status.items() if v}
    charts = [
        stacked_bars(
            "sessions-by-status", "Sessions per day by status", days, statuses, _status_css, _count
        ),
        stacked_bars(
            "tokens-by-runtime",
            "Tokens per day by runtime",
            days,
            dict(sorted(tokens.items())),
            runtime_css,
            _count,
        ),
        stacked_bars(
            "cost-by-runtime",
            "Cost per day by runtime (USD)",
            days,
            dict(sorted(spend.items())),
            runtime_css,
            _dollars,
        ),
        lines("duration", "Duration per day (p50, p95 of ended sessions)", days, durations),
    ]
    return f'<div class="charts">{"".join(charts)}</div>'


def _count(value: float) -> str:
    return f"{value:,.0f}"


def _dollars(value: float) -> str:
    return f"${value:.2f}"


def _status_css(status: str) -> str:
    """The class of a status's colour (``k-failed``...)."""
    return f"k-{status}"


def ranges(chosen: int, path: str = "/charts") -> str:
    """Links to the same page over 7, 30 and 90 days, the chosen one marked."""
    mark = ' aria-current="page"'
    links = [
        f'<a href="{path}?days={d}"{mark if d == chosen else ""}>{d} days</a>' for d in CHART_DAYS
    ]
    return f'<nav class="filters" aria-label="range">{"".join(links)}</nav>'


def chart_routes(view: View) -> list[Route]:
    """``/charts?days=7|30|90`` and its live twin."""

    async def body(request: Request) -> tuple[int, str]:
        days = chart_days(request.query_params)
        shown = day_range(days)
        return days, render_charts(await daily(view.butler.db, shown[0]), shown)

    async def charts(request: Request) -> Response:
        try:
            days, html = await body(request)
        except BadParam as exc:
            return await view.refused_page(str(exc), 400, "/charts")
        return await view.page(
            Page(
                title=f"{view.butler.config.name} · charts",
                subtitle=f"the last {days} days (UTC)",
                source=f"/api/charts?days={days}",
                body=html,
                current="/charts",
                controls=ranges(days),
            )
        )

    async def charts_json(request: Request) -> Response:
        try:
            _, html = await body(request)
        except BadParam as exc:
            return bad(exc)
        return live(html)

    return [
        Route("/charts", charts, methods=["GET"]),
        Route("/api/charts", charts_json, methods=["GET"]),
    ]
