"""Query parameters of the dashboard's views, each bounded and checked where it arrives.

A bad one is refused with :class:`BadParam`: one line naming the parameter,
the value and what is allowed. Unknown parameters are refused too, so a typo
never silently shows an unfiltered list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, time, timedelta

from butler.store.session_search import SessionQuery
from butler.store.sessions import STATUSES, parse_position

MAX_SEARCH = 200
MAX_LIMIT = 500
DEFAULT_LIMIT = 100
CHART_DAYS = (7, 30, 90)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:._-]{0,99}$")
_LIST_PARAMS = ("q", "status", "source", "runtime", "type", "from", "to", "before", "limit")


class BadParam(ValueError):
    """A query parameter the view cannot take; its message is the one line to show."""


def _shown(raw: str) -> str:
    return repr(raw[:60] + ("…" if len(raw) > 60 else ""))


def only(params: Mapping[str, str], allowed: Iterable[str]) -> None:
    """Refuse any parameter not in ``allowed``."""
    allowed = tuple(allowed)
    for name in params:
        if name not in allowed:
            expected = ", ".join(allowed) or "none"
            raise BadParam(f"{name[:40]!r}: not a parameter of this page; expected {expected}")


def _name(params: Mapping[str, str], key: str) -> str | None:
    raw = params.get(key, "")
    if raw == "":
        return None
    if not _NAME.match(raw):
        raise BadParam(
            f"{key}: {_shown(raw)} is not allowed; expected 1 to 100 letters, digits or :._-"
        )
    return raw


def _day(params: Mapping[str, str], key: str) -> date | None:
    raw = params.get(key, "")
    if raw == "":
        return None
    try:
        day = date.fromisoformat(raw[:10]) if len(raw) == 10 else None
    except ValueError:
        day = None
    if day is None or not 2000 <= day.year <= 2100:
        raise BadParam(f"{key}: {_shown(raw)} is not allowed; expected a date YYYY-MM-DD")
    return day


def integer(params: Mapping[str, str], key: str, low: int, high: int, default: int) -> int:
    """``params[key]`` as a whole number from ``low`` to ``high``."""
    raw = params.get(key, "")
    if raw == "":
        return default
    # isascii: str.isdigit() admits '²', which int() then refuses with an uncaught error.
    if not (raw.isascii() and raw.isdigit()) or not low <= int(raw[:9]) <= high:
        raise BadParam(f"{key}: {_shown(raw)} is not allowed; expected a number {low} to {high}")
    return int(raw)


def search_text(params: Mapping[str, str]) -> str | None:
    raw = params.get("q", "").strip()
    if raw == "":
        return None
    if len(raw) > MAX_SEARCH or "\x00" in raw:
        raise BadParam(
            f"q: {_shown(raw)} is not allowed; expected at most {MAX_SEARCH} characters, no NUL"
        )
    return raw


def session_query(params: Mapping[str, str]) -> tuple[SessionQuery, int]:
    """The session list's filters and page size from ``params``."""
    only(params, (*_LIST_PARAMS, "since"))
    status = params.get("status", "") or None
    if status is not None and status not in STATUSES:
        raise BadParam(
            f"status: {_shown(status)} is not allowed; expected one of {', '.join(STATUSES)}"
        )
    first, last = _day(params, "from"), _day(params, "to")
    if first and last and first > last:
        raise BadParam(f"to: {last} is before from {first}; expected a range forwards in time")
    try:
        before = parse_position("before", params["before"]) if params.get("before") else None
    except ValueError as exc:
        raise BadParam(str(exc)) from None
    query = SessionQuery(
        status=status,
        trigger_source=_name(params, "source"),
        runtime=_name(params, "runtime"),
        type=_name(params, "type"),
        since=datetime.combine(first, time(), UTC) if first else None,
        until=datetime.combine(last + timedelta(days=1), time(), UTC) if last else None,
        text=search_text(params),
        before=before,
    )
    return query, integer(params, "limit", 1, MAX_LIMIT, DEFAULT_LIMIT)


def chart_days(
    params: Mapping[str, str], allowed: Iterable[str] = ("days",), default: int = 30
) -> int:
    """``days`` of the charts: 7, 30 or 90 (``default`` when absent); others of ``allowed`` pass."""
    only(params, allowed)
    raw = params.get("days", "") or str(default)
    if raw not in {str(d) for d in CHART_DAYS}:
        raise BadParam(f"days: {_shown(raw)} is not allowed; expected one of 7, 30, 90")
    return int(raw)
