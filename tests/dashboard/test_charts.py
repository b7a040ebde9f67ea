"""Charts in a real Chromium: the SVG's bars and points match seeded numbers, and move live."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from tests.dashboard.conftest import ARTIFACTS, logged_in
from tests.dashboard.pages import fetch, refusal_in_frame

pytestmark = pytest.mark.slow

SEED = (
    "INSERT INTO sessions (id, prompt, status, trigger_source, runtime, created_at,"
    " duration_ms, input_tokens, output_tokens, cost_usd)"
    " SELECT gen_random_uuid(), 'p', r.s, 'external', r.rt, now() - make_interval(days => r.d),"
    " r.ms, r.i, r.o, r.c"
    " FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[],"
    " $7::numeric[]) AS r(s, rt, d, ms, i, o, c)"
)
#: (status, runtime, days ago, duration ms, input tokens, output tokens, cost)
ROWS = [
    ("succeeded", "command", 0, 1000, 100, 10, 0.5),
    ("succeeded", "command", 0, 2000, 100, 10, 0.5),
    ("succeeded", "command", 0, 3000, 100, 10, 0.5),
    ("failed", "command", 0, 4000, 50, 0, 0.25),
    ("succeeded", "codex", 1, 500, 1000, 200, 2.0),
    ("succeeded", "codex", 1, 500, 1000, 200, 2.0),
]


def bars(page, chart: str) -> dict[tuple[int, str], tuple[float, float]]:
    """{(days ago, series): (value, drawn height)} of one chart's bars or points."""
    found = page.locator(f"#{chart} [data-day]").evaluate_all(
        "nodes => nodes.map(n => [n.dataset.day, n.dataset.key, Number(n.dataset.value),"
        " Number(n.getAttribute('height'))])"
    )
    today = datetime.now(UTC).date()  # the charts' days are UTC days
    return {
        ((today - date.fromisoformat(day)).days, key): (value, height)
        for day, key, value, height in found
    }


def scale(page, chart: str) -> float:
    return float(page.get_attribute(f"#{chart} svg", "data-scale"))


def test_charts_match_the_seeded_numbers_and_update_live(seeded, browser):
    seeded.sql(SEED, *[list(c) for c in zip(*ROWS, strict=True)])
    page = logged_in(browser, seeded.url, viewport={"width": 1300, "height": 1000})
    page.goto(f"{seeded.url}/charts?days=7")
    status = bars(page, "sessions-by-status")
    assert {k: v for k, (v, _) in status.items()} == {
        (0, "succeeded"): 3, (0, "failed"): 1, (1, "succeeded"): 2,
    }  # fmt: skip
    # Heights are proportional: the tallest day (4 sessions) fills the scale.
    for value, height in status.values():
        assert height == pytest.approx(value * scale(page, "sessions-by-status"), abs=0.01)
    tokens = {k: v for k, (v, _) in bars(page, "tokens-by-runtime").items()}
    assert tokens == {(0, "command"): 380, (1, "codex"): 2400}
    cost = {k: v for k, (v, _) in bars(page, "cost-by-runtime").items()}
    assert cost == {(0, "command"): 1.75, (1, "codex"): 4.0}
    durations = {k: v for k, (v, _) in bars(page, "duration").items()}
    assert durations == {(0, "p50"): 2500, (0, "p95"): 3850, (1, "p50"): 500, (1, "p95"): 500}
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-charts.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "dashboard-charts-phone.png"), full_page=True)

    # A session ending now shows on the open page without a reload.
    seeded.sql(SEED, ["failed"], ["command"], [0], [10], [1], [1], [0.1])
    failed = page.locator('#sessions-by-status rect[data-key="failed"][data-value="2"]')
    failed.wait_for(timeout=20_000)
    page.close()


def test_chart_range_is_validated(seeded):
    status, body = fetch(f"{seeded.url}/charts?days=365")
    assert status == 400
    assert refusal_in_frame(body) == "days: '365' is not allowed; expected one of 7, 30, 90"
