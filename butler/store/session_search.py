"""Finding sessions: filters, full-text search and keyset pages, for the dashboard.

Each filter given becomes one condition; the order is always newest first by
``(created_at, id)``, so a page is read from an index whatever the table's
size, and the next page starts after the last row shown (no ``OFFSET``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from butler.store.db import Database
from butler.store.sessions import row_dict

#: The words of prompt and output, a stored column with its own index (migration 008).
SEARCH_VECTOR = "search"


@dataclass(frozen=True)
class SessionQuery:
    """What a person asked the session list for; None means any."""

    status: str | None = None
    trigger_source: str | None = None
    runtime: str | None = None
    type: str | None = None
    #: Created at or after this moment.
    since: datetime | None = None
    #: Created before this moment.
    until: datetime | None = None
    #: Words to find in prompt or output (web search syntax: "phrase", -not, or).
    text: str | None = None
    #: The page starts after this ``(created_at, id)``.
    before: tuple[datetime, uuid.UUID] | None = None


def _conditions(query: SessionQuery) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    args: list[Any] = []

    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    for column in ("status", "trigger_source", "runtime", "type"):
        value = getattr(query, column)
        if value is not None:
            where.append(f"{column} = {arg(value)}")
    if query.since is not None:
        where.append(f"created_at >= {arg(query.since)}")
    if query.until is not None:
        where.append(f"created_at < {arg(query.until)}")
    if query.text:
        where.append(f"{SEARCH_VECTOR} @@ websearch_to_tsquery('english', {arg(query.text)})")
    if query.before is not None:
        stamp, key = query.before
        where.append(f"(created_at, id) < ({arg(stamp)}, {arg(key)})")
    return where, args


#: A search matching at most this many rows is sorted from its index hits; a more
#: common one walks the newest-first index instead, where matches come quickly.
SEARCH_CAP = 5_000
_COLUMNS = (
    "id, status, type, trigger_source, runtime, model, trace_id, metadata,"
    " left(prompt, 2000) AS prompt, left(error, 2000) AS error,"
    " duration_ms, input_tokens, output_tokens, cost_usd,"
    " created_at, started_at, completed_at"
)  # outputs can be a megabyte each: a list shows a prompt's and an error's first line only


async def find_sessions(db: Database, query: SessionQuery, limit: int) -> list[dict[str, Any]]:
    """One page of sessions matching ``query``, newest first (``limit`` rows at most)."""
    where, args = _conditions(query)
    if query.text:
        found = await _rare_search(db, where, args, limit)
        if found is not None:
            return found
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    args.append(limit)
    records = await db.fetch(
        f"SELECT {_COLUMNS} FROM sessions {clause}"
        f"ORDER BY created_at DESC, id DESC LIMIT ${len(args)}",
        *args,
    )
    return [row_dict(r) for r in records]


#: Counting matches stops here: past it the list says "10,000+ matches".
COUNT_CAP = 10_000


async def count_matches(db: Database, query: SessionQuery) -> int:
    """How many sessions match ``query`` on every page, at most :data:`COUNT_CAP` + 1."""
    where, args = _conditions(replace(query, before=None))
    clause = f"WHERE {' AND '.join(where)} " if where else ""
    return await db.fetchval(
        f"SELECT count(*) FROM (SELECT 1 FROM sessions {clause}LIMIT {COUNT_CAP + 1}) AS m",
        *args,
    )


async def _rare_search(
    db: Database, where: list[str], args: list[Any], limit: int
) -> list[dict[str, Any]] | None:
    """The page of a search with few matches, or None when it has many.

    Ordered by time, PostgreSQL walks the newest-first index and tests each row,
    which for a rare word means every row (seconds at a million). Without an
    order it reads the search index; the matches, when few, are sorted here.
    """
    hits = await db.fetch(
        f"SELECT id, created_at FROM sessions WHERE {' AND '.join(where)} LIMIT {SEARCH_CAP + 1}",
        *args,
    )
    if len(hits) > SEARCH_CAP:
        return None
    top = sorted(hits, key=lambda r: (r["created_at"], r["id"]), reverse=True)[:limit]
    records = await db.fetch(
        f"SELECT {_COLUMNS} FROM sessions WHERE id = ANY($1::uuid[])", [r["id"] for r in top]
    )
    place = {r["id"]: i for i, r in enumerate(top)}
    return [row_dict(r) for r in sorted(records, key=lambda r: place[r["id"]])]


async def distinct_values(db: Database, column: str) -> list[str]:
    """The values a filter can take (trigger sources, runtimes), from their indexes.

    A loose index scan (one probe per distinct value) keeps this cheap at a
    million rows, where ``SELECT DISTINCT`` would read every row.
    """
    if column not in ("trigger_source", "runtime", "type"):
        raise ValueError(f"column: {column!r} cannot be listed")
    records = await db.fetch(
        f"WITH RECURSIVE v AS ((SELECT {column} AS x FROM sessions ORDER BY {column} LIMIT 1)"
        f" UNION ALL SELECT (SELECT {column} FROM sessions WHERE {column} > v.x"
        f" ORDER BY {column} LIMIT 1) FROM v WHERE v.x IS NOT NULL)"
        " SELECT x FROM v WHERE x IS NOT NULL LIMIT 200"
    )
    return [r["x"] for r in records]
