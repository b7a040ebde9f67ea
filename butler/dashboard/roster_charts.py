"""The roster's charts: sessions, tokens and cost per day, one colour per butler.

Each butler reports its own per-day figures in ``/api/summary`` (``daily``);
the roster draws them with the same server-side SVG bars as ``/charts``. A
summary comes from another process, so every entry is checked and bounded
here: a malformed one is left out, never drawn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

from butler.dashboard.charts import Series, stacked_bars

#: The figures of one day of one butler that the roster charts, with how each is shown.
FIGURES: dict[str, tuple[str, Callable[[float], str]]] = {
    "sessions": ("Sessions per day by butler", lambda v: f"{v:,.0f}"),
    "tokens": ("Tokens per day by butler", lambda v: f"{v:,.0f}"),
    "cost_usd": ("Cost per day by butler (USD)", lambda v: f"${v:.2f}"),
}


def daily_series(counts: Sequence[dict[str, Any]], first: date) -> list[dict[str, Any]]:
    """One entry per UTC day from ``first`` on that had a session: sessions, tokens, cost."""
    days: dict[date, dict[str, Any]] = {}
    for row in counts:
        if row["day"] < first:
            continue
        day = days.setdefault(row["day"], {"sessions": 0, "tokens": 0, "cost_usd": 0.0})
        day["sessions"] += row["sessions"]
        day["tokens"] += row["input_tokens"] + row["output_tokens"]
        day["cost_usd"] += row["cost_usd"]
    return [
        {"day": d.isoformat(), **v, "cost_usd": round(v["cost_usd"], 6)}
        for d, v in sorted(days.items())
    ]


def _entry(entry: Any, shown: set[date]) -> tuple[date, dict[str, float]] | None:
    """One checked ``daily`` entry, or None when it is not one the charts can draw."""
    if not isinstance(entry, dict) or not isinstance(entry.get("day"), str):
        return None
    try:
        day = date.fromisoformat(entry["day"][:10])
        values = {k: float(entry[k]) for k in FIGURES}
    except (KeyError, TypeError, ValueError):
        return None
    if day not in shown or not all(math.isfinite(v) and v >= 0 for v in values.values()):
        return None
    return day, values


def butler_series(summaries: Sequence[dict[str, Any]], days: list[date]) -> dict[str, Series]:
    """{figure: {butler: {day: value}}}; every butler is a key, so colours match across charts."""
    shown = set(days)
    found: dict[str, Series] = {k: {} for k in FIGURES}
    for summary in summaries:
        name = str(summary["name"])
        for series in found.values():
            series[name] = {}
        entries = summary.get("daily")
        if not isinstance(entries, list):
            continue
        for entry in entries[: len(days)]:  # a day each at most: bounded whatever was sent
            checked = _entry(entry, shown)
            if checked:
                for key, value in checked[1].items():
                    found[key][name][checked[0]] = value
    return found


def render_butler_charts(summaries: Sequence[dict[str, Any]], days: list[date]) -> str:
    """The three per-butler charts over ``days``."""
    series = butler_series(summaries, days)
    names = [str(s["name"]) for s in summaries]

    def css(name: str) -> str:
        return f"k-{names.index(name) % 6}"

    charts = [
        stacked_bars(f"{key.split('_')[0]}-by-butler", title, days, series[key], css, label)
        for key, (title, label) in FIGURES.items()
    ]
    return f'<div class="charts">{"".join(charts)}</div>'
