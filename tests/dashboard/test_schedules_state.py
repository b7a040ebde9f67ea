"""Schedules and the state store in a real Chromium."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from butler.security.login import issue_cookie
from tests.dashboard.conftest import ARTIFACTS, logged_in
from tests.dashboard.pages import fetch, form_token_of, refusal_in_frame
from tests.helpers import TEST_TOKEN

pytestmark = pytest.mark.slow

KOLKATA = timedelta(hours=5, minutes=30)  # no daylight saving: the offset is fixed


def test_schedule_next_fire_in_its_own_time_zone_and_run_now(seeded, browser):
    page = logged_in(browser, seeded.url, viewport={"width": 1300, "height": 800})
    page.goto(f"{seeded.url}/schedules")
    row = page.locator('tr[data-schedule="morning"]')
    # "0 8 * * *" in Asia/Kolkata: 08:00 there, 02:30 UTC, the next one after now.
    local_now = datetime.now(UTC) + KOLKATA
    day = local_now.date() + timedelta(days=1 if local_now.hour >= 8 else 0)
    expected = f"{day} 08:00 Asia/Kolkata · 02:30 UTC"
    assert row.locator("td.next").inner_text() == expected
    assert row.locator("td.next").get_attribute("data-utc") == f"{day}T02:30:00+00:00"
    assert row.locator("td.last").inner_text() == "never"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-schedules.png"), full_page=True)

    page.click('tr[data-schedule="morning"] button[value=run-now]')
    page.wait_for_url(re.compile(r"/schedules$"))
    # The fire is recorded and its session appears among the recent ones, live.
    row.locator('li[data-session] .status[data-status="succeeded"]').wait_for(timeout=20_000)
    assert "(manual)" in row.locator("td.last").inner_text()
    page.close()


def test_run_now_is_refused_without_the_token_or_from_another_origin(seeded):
    url = f"{seeded.url}/schedules/morning/run"
    found = seeded.sql(
        "INSERT INTO sessions (id, prompt, status, trigger_source, runtime) VALUES"
        " (gen_random_uuid(), 'x', 'succeeded', 'external', 'command') RETURNING id"
    )
    form = form_token_of(seeded.url, str(found[0]["id"]))
    cookie = {"Cookie": f"butler_token_{seeded.daemon.port}={issue_cookie(TEST_TOKEN)}"}
    for headers, body, expected in [
        ({"Origin": seeded.url}, form, 401),
        ({**cookie, "Origin": "http://attacker.example"}, form, 403),
        ({**cookie, "Origin": seeded.url}, "", 403),
    ]:
        assert fetch(url, headers=headers, data=body)[0] == expected
    assert seeded.sql("SELECT count(*) AS n FROM sessions")[0]["n"] == 1
    assert seeded.sql("SELECT last_fired_at FROM schedules")[0]["last_fired_at"] is None


def test_state_browser_by_prefix_pretty_and_escaped(seeded, browser):
    seeded.sql(
        "INSERT INTO state (key, value) SELECT k, v::jsonb FROM unnest($1::text[], $2::text[])"
        " AS t(k, v)",
        ["inbox/last_seen", "inbox/rules", "health:weight", "notes/<b>x</b>"],
        ['"2026-11-26"', '{"spam": ["<script>window.pwned=1</script>"], "keep": 3}',
         "81.5", '"<img src=x onerror=window.pwned=2>"'],
    )  # fmt: skip
    page = logged_in(browser, seeded.url, viewport={"width": 1200, "height": 800})
    page.goto(f"{seeded.url}/state")
    keys = page.locator("tr[data-key]").evaluate_all("rows => rows.map(r => r.dataset.key)")
    assert keys == ["health:weight", "inbox/last_seen", "inbox/rules", "notes/<b>x</b>"]
    value = page.locator('tr[data-key="inbox/rules"] pre.value').inner_text()
    assert value == '{\n  "keep": 3,\n  "spam": [\n    "<script>window.pwned=1</script>"\n  ]\n}'
    assert page.evaluate("window.pwned") is None and page.locator("#state b").count() == 0
    # A key's segment is a link to everything under it.
    page.click('tr[data-key="inbox/rules"] a:text-is("inbox/")')
    page.wait_for_url(re.compile(r"prefix=inbox%2F"))
    keys = page.locator("tr[data-key]").evaluate_all("rows => rows.map(r => r.dataset.key)")
    assert keys == ["inbox/last_seen", "inbox/rules"]
    page.screenshot(path=str(ARTIFACTS / "dashboard-state.png"), full_page=True)
    page.close()
    status, body = fetch(f"{seeded.url}/state?prefix=" + "k" * 600)
    line = refusal_in_frame(body)
    assert status == 400 and line.startswith("prefix: 'kkk") and "at most 512" in line
