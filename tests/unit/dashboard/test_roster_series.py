"""The roster draws only well-formed per-day entries: a summary comes from another process."""

from __future__ import annotations

from datetime import date

from butler.dashboard.charts import day_range
from butler.dashboard.roster_charts import butler_series

TODAY = date(2026, 3, 10)
DAYS = day_range(7, TODAY)
GOOD = {"day": "2026-03-10", "sessions": 2, "tokens": 30, "cost_usd": 1.5}


def test_malformed_or_out_of_range_entries_are_not_drawn():
    sent = [
        GOOD,
        {**GOOD, "day": "2026-03-01"},  # before the range
        {**GOOD, "day": "2026-03-11"},  # after it
        {**GOOD, "day": "2026-03-09", "cost_usd": "nan"},
        {**GOOD, "day": "2026-03-08", "sessions": -1},
        {**GOOD, "day": "not a day"},
        {"day": "2026-03-07"},
        "2026-03-06",
    ]
    series = butler_series([{"name": "alpha", "daily": sent}, {"name": "beta"}], DAYS)
    assert series["cost_usd"] == {"alpha": {TODAY: 1.5}, "beta": {}}
    assert series["sessions"]["alpha"] == {TODAY: 2}


def test_at_most_one_entry_per_shown_day_is_read():
    flood = [GOOD] * 7 + [{**GOOD, "day": "2026-03-09"}]
    series = butler_series([{"name": "alpha", "daily": flood}], DAYS)
    assert series["tokens"]["alpha"] == {TODAY: 30}
