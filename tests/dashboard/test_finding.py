"""Finding sessions in a real Chromium: filters, full-text search, pages, trace links, run again."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from butler.security.login import issue_cookie
from tests.dashboard.conftest import ARTIFACTS, TRACE_URL, logged_in
from tests.dashboard.pages import (
    ROWS,
    fetch,
    form_token_of,
    refusal_in_frame,
    seed_rows,
)
from tests.helpers import TEST_TOKEN

pytestmark = pytest.mark.slow

LIVE_MS = 20_000


def shown_prompts(page) -> list[str]:
    return sorted(page.locator("#sessions td.what").all_inner_texts())


def test_filters_and_search_narrow_a_seeded_table(seeded, browser):
    seed_rows(seeded)
    page = logged_in(browser, seeded.url, viewport={"width": 1300, "height": 900})
    assert len(shown_prompts(page)) == len(ROWS)
    # Full-text search finds words in the output as well as the prompt, stemmed;
    # from the keyboard: "/" jumps to the search box, Enter submits.
    page.keyboard.press("/")
    page.keyboard.type("kangaroo")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"q=kangaroo"))
    assert shown_prompts(page) == ["Pay the plumber invoice", "Summarise the news"]
    page.fill("#q", "invoice")
    page.select_option("select[name=status]", "failed")
    page.click("#filters button[type=submit]")
    page.wait_for_url(re.compile(r"status=failed"))
    assert shown_prompts(page) == ["Pay the dentist invoice"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-search.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(ARTIFACTS / "dashboard-search-phone.png"), full_page=True)
    page.set_viewport_size({"width": 1300, "height": 900})
    # Source, runtime and date range, each from the form's own choices.
    page.goto(f"{seeded.url}/?runtime=codex")
    assert shown_prompts(page) == ["Book a train", "Summarise the news"]
    page.goto(f"{seeded.url}/?source=schedule:morning")
    assert shown_prompts(page) == ["Water the plants"]
    assert "schedule:morning" in page.locator("select[name=source]").inner_text()
    today = datetime.now(UTC).date()
    since, until = today - timedelta(days=25), today - timedelta(days=5)
    page.goto(f"{seeded.url}/?from={since}&to={until}")
    assert shown_prompts(page) == ["Book a train"]  # 20 days ago; the others are 0-3 and 40
    page.goto(f"{seeded.url}/?from=2000-01-01&to=2000-12-31")
    assert shown_prompts(page) == []
    page.close()


def test_a_bad_parameter_is_one_line_naming_it_inside_the_page(seeded):
    for query, words in [
        ("status=bogus", "status: 'bogus' is not allowed; expected one of pending, running"),
        ("limit=100000", "limit: '100000' is not allowed; expected a number 1 to 500"),
        ("from=yesterday", "from: 'yesterday' is not allowed; expected a date YYYY-MM-DD"),
        ("colour=red", "'colour': not a parameter of this page; expected q, status"),
        ("q=" + "x" * 300, "q: 'xxxx"),
    ]:
        status, body = fetch(f"{seeded.url}/?{query}")
        assert status == 400 and refusal_in_frame(body).startswith(words), body
    for path in ("/charts?days=5", "/schedules?x=1", "/state?limit=0", "/roster?days=1"):
        status, body = fetch(f"{seeded.url}{path}")
        assert status == 400 and refusal_in_frame(body), path
    nil = "00000000-0000-0000-0000-000000000000"
    status, body = fetch(f"{seeded.url}/sessions/{nil}")
    assert status == 404 and "is not a session of this butler" in refusal_in_frame(body)


def test_a_parameter_at_the_edge_of_the_calendar_or_of_unicode_is_refused_not_a_crash(seeded):
    nil = "00000000-0000-0000-0000-000000000000"
    for path, words in [
        ("/?limit=%C2%B2", "limit: '²' is not allowed; expected a number 1 to 500"),
        (f"/?before=0001-01-01T00:00:00%2B01:00,{nil}", "before: '0001-01-01T00:00:00+01:00"),
        (f"/?before=9999-12-31T23:59:59-14:00,{nil}", "before: '9999-12-31T23:59:59-14:00"),
    ]:
        status, body = fetch(f"{seeded.url}{path}")
        assert status == 400 and refusal_in_frame(body).startswith(words), body
    status, body = fetch(f"{seeded.url}/api/sessions?since=0001-01-01T00:00:00%2B01:00")
    assert status == 400 and body.strip().count("\n") == 0
    assert body.startswith('{"error":"since: \'0001-01-01T00:00:00+01:00\' is out of range')


def test_the_list_says_why_each_failed_and_how_many_a_search_found(seeded, browser):
    seed_rows(seeded)
    seeded.sql(
        "UPDATE sessions SET error = $1 WHERE prompt = 'Pay the dentist invoice'",
        "claude-code has no usable credential: set ANTHROPIC_API_KEY\nthe CLI said: 401",
    )
    page = logged_in(browser, seeded.url, viewport={"width": 1300, "height": 900})
    row = page.locator("#sessions tr", has_text="Pay the dentist invoice")
    error = row.locator("td.error").inner_text()
    assert error == "claude-code has no usable credential: set ANTHROPIC_API_KEY"
    assert page.locator("#matches").count() == 0  # nothing asked for: no count
    page.goto(f"{seeded.url}/?q=invoice")
    assert page.inner_text("#matches") == "2 matches"
    page.goto(f"{seeded.url}/?q=invoice&limit=1")  # the count is of every page, not this one
    assert page.inner_text("#matches") == "2 matches" and len(shown_prompts(page)) == 1
    page.goto(f"{seeded.url}/?status=cancelled")
    assert page.inner_text("#matches") == "1 match"
    page.close()


def test_paging_through_ten_thousand_rows(seeded, browser):
    seeded.sql(
        "INSERT INTO sessions (id, prompt, status, trigger_source, runtime, created_at)"
        " SELECT gen_random_uuid(), 'row ' || g, 'succeeded', 'external', 'command',"
        " now() - make_interval(secs => g) FROM generate_series(1, 10000) g"
    )
    page = logged_in(browser, seeded.url)
    page.goto(f"{seeded.url}/?limit=500")
    seen: list[str] = []
    while True:
        seen += page.locator("#sessions td.what").all_inner_texts()
        older = page.locator("#older")
        if older.count() == 0:
            break
        older.click()
        page.wait_for_url(re.compile(r"before="))
    # Every row exactly once, newest first, across 20 pages.
    assert seen == [f"row {g}" for g in range(1, 10_001)]
    page.close()


def test_a_session_links_to_its_trace_and_runs_again(seeded, browser):
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    found = seeded.sql(
        "INSERT INTO sessions (id, prompt, output, status, trigger_source, runtime, trace_id)"
        " VALUES (gen_random_uuid(), 'Say hello', 'done: Say hello', 'succeeded', 'external',"
        " 'command', $1) RETURNING id",
        trace,
    )
    session_id = str(found[0]["id"])
    page = logged_in(browser, seeded.url)
    page.goto(f"{seeded.url}/sessions/{session_id}")
    assert page.get_attribute("#trace", "href") == TRACE_URL.replace("{trace_id}", trace)
    page.click("button[value=run-again]")
    page.wait_for_url(re.compile(r"/sessions/(?!" + session_id + ")"))
    page.locator('span.status[data-status="succeeded"]').wait_for(timeout=LIVE_MS)
    assert page.inner_text("#output") == "done: Say hello"
    assert session_id in page.inner_text("dl")  # "run again of"
    page.close()


def test_run_again_is_refused_without_the_token_or_from_another_origin(seeded):
    found = seeded.sql(
        "INSERT INTO sessions (id, prompt, status, trigger_source, runtime) VALUES"
        " (gen_random_uuid(), 'Say hello', 'succeeded', 'external', 'command') RETURNING id"
    )
    url = f"{seeded.url}/sessions/{found[0]['id']}/run-again"
    form = form_token_of(seeded.url, str(found[0]["id"]))
    cookie = {"Cookie": f"butler_token_{seeded.daemon.port}={issue_cookie(TEST_TOKEN)}"}
    own = {"Origin": seeded.url}
    refusals = [
        ({**own}, form, 401),  # no owner token
        ({**cookie, "Origin": "https://evil.example"}, form, 403),  # a foreign page
        ({**cookie}, form, 403),  # no Origin at all
        ({**cookie, **own}, "csrf=wrong", 403),  # no form token
    ]
    for headers, body, expected in refusals:
        status, text = fetch(url, headers=headers, data=body)
        assert status == expected, (headers, text)
    assert seeded.sql("SELECT count(*) AS n FROM sessions")[0]["n"] == 1
    status, _ = fetch(url, headers={**cookie, **own}, data=form)
    assert status == 303  # the same request with everything is accepted
