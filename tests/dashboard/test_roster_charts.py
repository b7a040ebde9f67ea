"""The roster's per-butler charts in a real Chromium: three butlers under ``butler up``,
sessions seeded on known days, each bar's butler, day and value checked over 7, 30, 90 days."""

from __future__ import annotations

import json
import sys
from datetime import UTC, date, datetime, timedelta

import pytest

from tests.dashboard.conftest import ARTIFACTS, launched, run_sql
from tests.dashboard.pages import fetch, refusal_in_frame
from tests.dashboard.roster_pages import NAMES, answering, configured_port, process, three
from tests.helpers import TEST_TOKEN

pytestmark = pytest.mark.slow
__all__ = ["three"]  # the fixture, imported to be used here

SEED = (
    "INSERT INTO sessions (id, prompt, status, trigger_source, runtime, created_at,"
    " input_tokens, output_tokens, cost_usd)"
    " SELECT gen_random_uuid(), 'p', 'succeeded', 'external', 'command',"
    " date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
    " + make_interval(days => -r.d, hours => 1), r.i, r.o, r.c"
    " FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::numeric[]) AS r(d, i, o, c)"
)
#: Per butler: (days ago, input tokens, output tokens, cost), one session each.
SESSIONS = {
    "alpha": [(0, 100, 10, 0.5), (0, 100, 10, 0.25), (1, 1000, 0, 2.0), (12, 5, 5, 1.0)],
    "beta": [(0, 40, 2, 1.5), (40, 7, 3, 3.0)],
    "gamma": [(1, 0, 0, 0.0), (1, 0, 0, 0.0), (1, 0, 0, 0.0)],
}


def expected(figure: str, days: int) -> dict[tuple[str, str], float]:
    """{(butler, day): value} summed from SESSIONS over the last ``days``; zeros not drawn."""
    today = datetime.now(UTC).date()
    found: dict[tuple[str, str], float] = {}
    for name, rows in SESSIONS.items():
        for ago, i, o, c in rows:
            if ago < days:
                key = (name, (today - timedelta(days=ago)).isoformat())
                add = {"sessions": 1, "tokens": i + o, "cost": c}[figure]
                found[key] = found.get(key, 0) + add
    return {k: v for k, v in found.items() if v}


def bars(page, chart: str) -> dict[tuple[str, str], float]:
    """{(butler, day): value} of one chart's bars, each height checked against its value."""
    svg = page.locator(f"#{chart} svg")
    scale = float(svg.get_attribute("data-scale"))
    found = page.locator(f"#{chart} rect[data-day]").evaluate_all(
        "nodes => nodes.map(n => [n.dataset.key, n.dataset.day, Number(n.dataset.value),"
        " Number(n.getAttribute('height'))])"
    )
    for _, _, value, height in found:
        assert height == pytest.approx(value * scale, abs=0.01)
    return {(key, day): value for key, day, value, _ in found}


def check(page, days: int) -> None:
    assert page.locator("#sessions-by-butler svg rect").count() > 0
    legend = page.locator("#cost-by-butler .legend li").all_inner_texts()
    assert legend == list(NAMES)
    for chart, figure in (("sessions-by-butler", "sessions"), ("tokens-by-butler", "tokens"),
                          ("cost-by-butler", "cost")):  # fmt: skip
        got = bars(page, chart)
        want = expected(figure, days)
        assert got.keys() == want.keys(), (chart, days)
        assert got == pytest.approx(want), (chart, days)
    first = (datetime.now(UTC).date() - timedelta(days=days - 1)).strftime("%b %d")
    assert first in page.locator("#cost-by-butler svg").text_content()


def test_roster_charts_cost_and_sessions_per_day_by_butler(roster, three, tmp_path):
    from tests.conftest import TEST_DSN

    argv = [sys.executable, "-m", "butler.cli", "up", "--roster", str(roster),
            "--database-url", TEST_DSN]  # fmt: skip
    log = tmp_path / "up.log"
    with process(argv, log) as proc:
        url = f"http://127.0.0.1:{configured_port(roster / 'alpha')}"
        answering(url, proc, log)
        for name, rows in SESSIONS.items():
            run_sql(three[name], SEED, *[list(c) for c in zip(*rows, strict=True)])
        with launched() as browser:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(f"{url}/?token={TEST_TOKEN}")
            page.goto(f"{url}/roster")
            check(page, 7)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "dashboard-roster-charts.png"), full_page=True)
            for days in (30, 90):
                page.click(f'nav[aria-label="range"] a[href="/roster?days={days}"]')
                page.wait_for_url(f"**/roster?days={days}")
                check(page, days)
            page.screenshot(path=str(ARTIFACTS / "dashboard-roster-charts-90.png"), full_page=True)
            page.close()
        _refuses_bad_days(url)
        _summary_is_bounded(url)


def _refuses_bad_days(url: str) -> None:
    line = "days: '365' is not allowed; expected one of 7, 30, 90"
    status, body = fetch(f"{url}/roster?days=365")
    assert (status, refusal_in_frame(body)) == (400, line)
    status, body = fetch(f"{url}/api/roster?days=365")
    assert (status, json.loads(body)) == (400, {"error": line})
    status, body = fetch(f"{url}/api/summary?days=365")
    assert (status, json.loads(body)) == (400, {"error": line})
    assert fetch(f"{url}/api/summary?days=7", headers={"Authorization": ""})[0] == 401


def _summary_is_bounded(url: str) -> None:
    status, body = fetch(f"{url}/api/summary?days=7")
    daily = json.loads(body)["daily"]
    today = datetime.now(UTC).date()
    assert status == 200
    assert [d["day"] for d in daily] == [str(today - timedelta(days=1)), str(today)]
    assert daily[1] == {"day": str(today), "sessions": 2, "tokens": 220, "cost_usd": 0.75}
    assert all(date.fromisoformat(d["day"]) > today - timedelta(days=7) for d in daily)
