"""Finding sessions and their per-day figures, against the real database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from butler.store.session_days import daily, refresh
from butler.store.session_search import SEARCH_VECTOR, SessionQuery, find_sessions
from butler.store.sessions import NewSession, SessionOutcome, SessionStore

INSERT = (
    "INSERT INTO sessions (id, prompt, output, status, trigger_source, runtime, created_at,"
    " duration_ms, cost_usd) VALUES (gen_random_uuid(), $1, $2, $3, 'external', 'fake', $4,"
    " $5, $6)"
)


async def test_search_finds_words_of_prompt_and_output_stemmed(db):
    now = datetime.now(UTC)
    await db.execute(INSERT, "Pay the invoices", "paid", "succeeded", now, 10, 0)
    await db.execute(INSERT, "Water plants", "The invoice was lost", "failed", now, 10, 0)
    await db.execute(INSERT, "Book a train", "booked", "succeeded", now, 10, 0)
    found = await find_sessions(db, SessionQuery(text="invoice"), 10)
    assert sorted(r["prompt"] for r in found) == ["Pay the invoices", "Water plants"]
    found = await find_sessions(db, SessionQuery(text="invoice -lost"), 10)
    assert [r["prompt"] for r in found] == ["Pay the invoices"]
    found = await find_sessions(db, SessionQuery(text="invoice", status="failed"), 10)
    assert [r["prompt"] for r in found] == ["Water plants"]


async def test_search_reads_the_expression_index(db):
    """Searches read the index of the stored words, not every row's text."""
    async with db.pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")
        plan = await conn.fetch(
            f"EXPLAIN SELECT id FROM sessions WHERE {SEARCH_VECTOR}"
            " @@ websearch_to_tsquery('english', 'x')"
        )
    assert "sessions_search_idx" in "\n".join(r[0] for r in plan)


async def test_a_huge_output_is_still_stored_and_searchable(db):
    """A tsvector holds at most 1 MB: the indexed text is cut so no row becomes unwritable."""
    store = SessionStore(db, max_text_bytes=8 * 1024 * 1024)
    session_id = await store.create(NewSession("big", "external", "fake"))
    words = " ".join(f"w{i}" for i in range(600_000))  # ~4.5 MB of distinct words
    outcome = SessionOutcome("succeeded", True, "needle " + words, None, [], 5)
    await store.complete(session_id, outcome)
    assert [r["prompt"] for r in await find_sessions(db, SessionQuery(text="needle"), 5)] == ["big"]


async def test_days_are_recomputed_only_when_their_sessions_change(db):
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    if today > datetime.now(UTC):
        today -= timedelta(days=1)  # before noon UTC: use yesterday noon as "today"
    for ms, days_ago in [(100, 0), (300, 0), (200, 0), (50, 2)]:
        await db.execute(INSERT, "p", "o", "succeeded", today - timedelta(days=days_ago), ms, 0.5)
    # Changed a minute ago: past the refresh's overlap, so a second refresh skips them.
    await db.execute("ALTER TABLE sessions DISABLE TRIGGER sessions_touch")
    await db.execute("UPDATE sessions SET updated_at = now() - interval '1 minute'")
    await db.execute("ALTER TABLE sessions ENABLE TRIGGER sessions_touch")
    figures = await daily(db, (today - timedelta(days=6)).date())
    counts = {(r["day"], r["status"]): r["sessions"] for r in figures["counts"]}
    earlier = (today - timedelta(days=2)).date()
    assert counts == {(today.date(), "succeeded"): 3, (earlier, "succeeded"): 1}
    p50 = {r["day"]: r["p50_ms"] for r in figures["durations"]}
    assert p50[today.date()] == 200
    assert await refresh(db) == 0  # nothing changed: nothing recomputed
    await db.execute("UPDATE sessions SET status = 'failed' WHERE duration_ms = 50")
    assert await refresh(db) == 1  # only the day that changed
    figures = await daily(db, (today - timedelta(days=6)).date())
    assert {r["status"] for r in figures["counts"] if r["day"] != today.date()} == {"failed"}


@pytest.mark.parametrize(
    ("query", "line"),
    [
        ({"status": "done"}, "status: 'done' is not allowed; expected one of pending, running"),
        ({"limit": "0"}, "limit: '0' is not allowed; expected a number 1 to 500"),
        ({"from": "2026-02-30"}, "from: '2026-02-30' is not allowed; expected a date YYYY-MM-DD"),
        ({"from": "2026-02-03", "to": "2026-02-01"}, "to: 2026-02-01 is before from 2026-02-03"),
        ({"source": "a b"}, "source: 'a b' is not allowed; expected 1 to 100 letters"),
        ({"before": "x"}, "before: 'x' is not a session's position"),
        ({"order": "id"}, "'order': not a parameter of this page"),
    ],
)
def test_every_list_parameter_is_checked_in_one_line(query, line):
    from butler.dashboard.params import BadParam, session_query

    with pytest.raises(BadParam) as caught:
        session_query(query)
    assert str(caught.value).startswith(line) and "\n" not in str(caught.value)


async def test_rare_and_common_words_page_newest_first_alike(db, monkeypatch):
    """Few matches are sorted from the search index, many walk the time index: same pages."""
    import butler.store.session_search as search

    monkeypatch.setattr(search, "SEARCH_CAP", 3)
    start = datetime.now(UTC)
    for i in range(6):
        word = "rare" if i == 4 else "common"
        await db.execute(INSERT, f"{word} {i}", "o", "succeeded", start - timedelta(hours=i), 1, 0)
    for word, expected in [("common", ["common 0", "common 1", "common 2", "common 3",
                                       "common 5"]), ("rare", ["rare 4"])]:  # fmt: skip
        first = await find_sessions(db, SessionQuery(text=word), 2)
        key = (datetime.fromisoformat(first[-1]["created_at"]), uuid.UUID(first[-1]["id"]))
        rest = await find_sessions(db, SessionQuery(text=word, before=key), 10)
        assert [r["prompt"] for r in first + rest] == expected
