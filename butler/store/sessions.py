"""The ``sessions`` table: one row per runtime session, whatever happened to it."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from butler.store.db import Database
from butler.store.session_ids import ambiguous, id_range
from butler.store.tenants import Tenant
from butler.store.text import DEFAULT_MAX_TEXT_BYTES, RowText, clean_text

STATUSES = ("pending", "running", "succeeded", "failed", "cancelled", "ended")

#: Merge ``{"sanitised": [...], "truncated": [...]}`` into a row's metadata, appending to
#: lists an earlier write left there (the prompt may be flagged at creation, the output later).
#: Where a row's metadata keeps its runtime's running totals (``SessionOutcome.totals``).
TOTALS_KEY = "runtime_totals"
_MERGE_FLAGS = (
    "metadata || COALESCE((SELECT jsonb_object_agg(k, COALESCE(metadata->k, '[]'::jsonb) || v)"
    " FROM jsonb_each({param}::jsonb) AS flag(k, v)), '{{}}'::jsonb)"
)


@dataclass(frozen=True)
class NewSession:
    """What is known of a session before its runtime starts."""

    prompt: str
    trigger_source: str
    runtime: str
    model: str | None = None
    type: str = "trigger"
    parent_session_id: uuid.UUID | None = None
    trace_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    #: The chain's root trigger when a session started this one (spawner/chains.py).
    root_id: uuid.UUID | None = None
    chain_depth: int = 0


@dataclass(frozen=True)
class SessionOutcome:
    """What is known of a session after its runtime ended."""

    status: str
    success: bool
    output: str
    error: str | None
    tool_calls: list[dict[str, Any]]
    duration_ms: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    runtime_session_id: str | None = None
    #: The model the runtime reported; recorded only where the butler configured none.
    model: str | None = None
    #: The running totals a runtime reports for a whole resumed conversation, kept on the
    #: row's metadata for a session resuming this one (butler/spawner/usage.py).
    totals: dict[str, Any] | None = None


def parse_timestamp(name: str, raw: str) -> datetime:
    """An ISO 8601 timestamp with a time zone from argument ``name``; ValueError otherwise."""
    try:
        value = datetime.fromisoformat(raw[:64])
    except ValueError:
        raise ValueError(
            f"{name}: {raw[:64]!r} is not a timestamp; expected ISO 8601 with a time zone"
        ) from None
    if value.tzinfo is None:
        raise ValueError(f"{name}: {raw[:64]!r} has no time zone; expected one, e.g. +00:00")
    try:  # the database reads it in UTC: 0001-01-01 at +01:00 has no UTC time
        value.astimezone(UTC)
    except OverflowError:
        raise ValueError(
            f"{name}: {raw[:64]!r} is out of range in UTC; expected a time from year 1 to 9999"
        ) from None
    return value


def parse_position(name: str, raw: str) -> tuple[datetime, uuid.UUID]:
    """A row's place in a listing, ``<created_at>,<id>``, for keyset paging."""
    stamp, _, key = raw[:100].rpartition(",")
    try:
        return parse_timestamp(name, stamp), uuid.UUID(key)
    except ValueError:
        raise ValueError(
            f"{name}: {raw[:100]!r} is not a session's position; "
            "expected <created_at ISO timestamp>,<session id>"
        ) from None


def position(row: dict[str, Any]) -> str:
    """The ``before`` value that pages past ``row`` (a listed row, as strings)."""
    return f"{row['created_at']},{row['id']}"


def row_dict(record: Any) -> dict[str, Any]:
    """A row as JSON-ready values: ids, decimals and times as strings or floats.

    The ``search`` column (the words of prompt and output, for full-text search)
    is an index's material, not part of the record.
    """
    data = dict(record)
    data.pop("search", None)
    for key, value in data.items():
        if isinstance(value, uuid.UUID):
            data[key] = str(value)
        elif isinstance(value, Decimal):
            data[key] = float(value)
        elif hasattr(value, "isoformat"):
            data[key] = value.isoformat()
    return data


class SessionStore:
    """Create, complete and read session rows.

    Every text and JSON value goes through :class:`RowText` on its way in, so a
    row can always be written: NUL and invalid UTF-8 become U+FFFD and fields
    longer than ``max_text_bytes`` are cut with a marker, both noted in the
    row's ``metadata`` (``sanitised`` and ``truncated``: lists of field names).
    """

    def __init__(self, db: Database, max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> None:
        self.db = db
        self.max_text_bytes = max_text_bytes

    def _row_text(self) -> RowText:
        return RowText(self.max_text_bytes)

    async def create(self, new: NewSession, status: str = "pending") -> uuid.UUID:
        row = self._row_text()
        values = [
            row.text(name, getattr(new, name))
            for name in ("prompt", "trigger_source", "runtime", "model")
        ]
        kind, trace_id = row.text("type", new.type), row.text("trace_id", new.trace_id)
        metadata = row.json("metadata", new.metadata)
        metadata = {**metadata, **row.flags()} if isinstance(metadata, dict) else row.flags()
        await self.db.execute(
            "INSERT INTO sessions (id, prompt, trigger_source, runtime, model, status, type,"
            " parent_session_id, trace_id, metadata, started_at, root_id, chain_depth)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,"
            " CASE WHEN $6 = 'running' THEN now() END, $11, $12)",
            new.id,
            *values,
            status,
            kind,
            new.parent_session_id,
            trace_id,
            metadata,
            new.root_id,
            new.chain_depth,
        )
        return new.id

    async def mark_running(self, session_id: uuid.UUID) -> None:
        await self.db.execute(
            "UPDATE sessions SET status = 'running', started_at = now() WHERE id = $1",
            session_id,
        )

    async def update_metadata(self, session_id: uuid.UUID, metadata: dict[str, Any]) -> None:
        cleaned = self._row_text().json("metadata", metadata)
        await self.db.execute(
            "UPDATE sessions SET metadata = metadata || $2::jsonb WHERE id = $1",
            session_id,
            cleaned if isinstance(cleaned, dict) else {},
        )

    def storable(self, outcome: SessionOutcome) -> tuple[SessionOutcome, dict[str, list[str]]]:
        """``outcome`` as it will be stored (cleaned, capped), and the flags for its row.

        A caller that wants to hand back exactly what was recorded (output cut at
        the same cap) returns the first value instead of the original.
        """
        row = self._row_text()
        stored = dataclasses.replace(
            outcome,
            output=row.text("output", outcome.output) or "",
            error=row.text("error", outcome.error),
            tool_calls=row.json("tool_calls", outcome.tool_calls),
            runtime_session_id=row.text("runtime_session_id", outcome.runtime_session_id),
            model=row.text("model", outcome.model),
        )
        return stored, row.flags()

    async def complete(self, session_id: uuid.UUID, outcome: SessionOutcome) -> SessionOutcome:
        """Record how a session ended; return the outcome as stored.

        A result a worker handed back for the session (``session_results``) is dropped
        in the same statement: until the row records it, a daemon killed in between
        finds it at its next start (butler/spawner/handed_over.py); after, nothing
        reads it again.
        """
        outcome, flags = self.storable(outcome)
        await self.db.execute(
            "WITH handed AS (DELETE FROM session_results WHERE session_id = $1) "
            "UPDATE sessions SET status = $2, success = $3, output = $4, error = $5,"
            " tool_calls = $6, duration_ms = $7, input_tokens = $8, output_tokens = $9,"
            " cache_read_tokens = $10, cache_write_tokens = $11, cost_usd = $12,"
            " runtime_session_id = COALESCE($13, runtime_session_id),"
            " model = COALESCE(model, $15),"
            " completed_at = now(), started_at = COALESCE(started_at, now()),"
            " metadata = " + _MERGE_FLAGS.format(param="$14") + " || CASE WHEN $16::jsonb"
            f" IS NULL THEN '{{}}'::jsonb ELSE jsonb_build_object('{TOTALS_KEY}', $16::jsonb) END"
            " WHERE id = $1",
            session_id,
            outcome.status,
            outcome.success,
            outcome.output,
            outcome.error,
            outcome.tool_calls,
            outcome.duration_ms,
            outcome.input_tokens,
            outcome.output_tokens,
            outcome.cache_read_tokens,
            outcome.cache_write_tokens,
            outcome.cost_usd,
            outcome.runtime_session_id,
            flags,
            outcome.model,
            outcome.totals,
        )
        return outcome

    async def drop_handed_result(self, session_id: uuid.UUID) -> None:
        """Drop a result a worker handed back for the session, unrecorded: for a row the
        database refused to complete (butler/spawner/completions.py)."""
        await self.db.execute("DELETE FROM session_results WHERE session_id = $1", session_id)

    async def get(self, session_id: uuid.UUID | str) -> dict[str, Any] | None:
        try:
            key = uuid.UUID(str(session_id))
        except ValueError:
            return None
        record = await self.db.fetchrow("SELECT * FROM sessions WHERE id = $1", key)
        return row_dict(record) if record else None

    async def find(self, given: str) -> dict[str, Any] | None:
        """The session whose id is ``given`` or starts with it (:mod:`.session_ids`).

        Raises :class:`~butler.store.session_ids.AmbiguousId` when several ids do.
        """
        bounds = id_range(given)
        if bounds is None:
            return None
        if bounds[0] == bounds[1]:
            return await self.get(bounds[0])
        records = await self.db.fetch(
            "SELECT * FROM sessions WHERE id BETWEEN $1 AND $2 ORDER BY id LIMIT 5", *bounds
        )
        if len(records) > 1:
            raise ambiguous(given, [r["id"] for r in records])
        return row_dict(records[0]) if records else None

    async def list(
        self,
        *,
        limit: int = 50,
        status: str | None = None,
        trigger_source: str | None = None,
        type: str | None = None,
        before: tuple[datetime, uuid.UUID] | None = None,
        tenant: Tenant | None = None,
    ) -> list[dict[str, Any]]:
        """The newest sessions (older than ``before``, a row's ``(created_at, id)``), of
        ``tenant``'s scope when given.

        Only the filters given reach the SQL, so each query matches one of the
        ``(column, created_at, id)`` indexes whatever the table's size.
        """
        where: list[str] = []
        args: list[Any] = []
        filters = (("status", status), ("trigger_source", trigger_source), ("type", type))
        for column, value in filters:
            if value is not None:
                args.append(clean_text(value)[0])
                where.append(f"{column} = ${len(args)}")
        if before is not None:
            args += before
            where.append(f"(created_at, id) < (${len(args) - 1}, ${len(args)})")
        if tenant is not None:
            clause, more = tenant.where(len(args) + 1)
            args += more
            where.append(clause)
        args.append(limit)
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        records = await self.db.fetch(
            f"SELECT * FROM sessions {clause}ORDER BY created_at DESC, id DESC LIMIT ${len(args)}",
            *args,
        )
        return [row_dict(r) for r in records]

    async def of_types(self, types: Sequence[str]) -> list[dict[str, Any]]:
        """Every session of these types (builders), newest first, from the type index."""
        records = await self.db.fetch(
            "SELECT * FROM sessions WHERE type = ANY($1::text[]) ORDER BY created_at DESC, id DESC",
            list(types),
        )
        return [row_dict(r) for r in records]

    async def cursor(self) -> datetime:
        """The database's clock now: what a reader passes to :meth:`changed_since` next."""
        return await self.db.fetchval("SELECT clock_timestamp()")

    async def changed_since(self, since: datetime, limit: int) -> list[dict[str, Any]]:
        """Rows changed after ``since``, and running ones (their duration moves unseen)."""
        records = await self.db.fetch(
            "SELECT * FROM sessions WHERE updated_at > $1 OR status = 'running'"
            " ORDER BY created_at DESC, id DESC LIMIT $2",
            since,
            limit,
        )
        return [row_dict(r) for r in records]

    async def find_active(self, dedupe_key: str) -> str | None:
        """The id of a pending or running session started with ``dedupe_key``, if any."""
        value = await self.db.fetchval(
            "SELECT id FROM sessions WHERE metadata->>'dedupe_key' = $1"
            " AND status IN ('pending', 'running') ORDER BY created_at DESC LIMIT 1",
            clean_text(dedupe_key)[0],
        )
        return str(value) if value else None

    async def unfinished(self) -> list[dict[str, Any]]:
        """Rows a stopped daemon left pending or running, each with ``elapsed_s``: the
        seconds since it started (or was created), by the database's clock."""
        rows = await self.db.fetch(
            "SELECT id, prompt, trigger_source, parent_session_id, metadata,"
            " EXTRACT(EPOCH FROM now() - COALESCE(started_at, created_at))::float8"
            " AS elapsed_s FROM sessions WHERE status IN ('pending', 'running')"
        )
        return [dict(row) for row in rows]

    async def unfinished_with(self, key: str) -> list[dict[str, Any]]:
        """Rows left pending or running whose metadata holds ``key``: their id, runtime
        and metadata."""
        rows = await self.db.fetch(
            "SELECT id, runtime, metadata FROM sessions WHERE status IN ('pending', 'running')"
            " AND metadata ? $1",
            key,
        )
        return [dict(row) for row in rows]

    async def fail_unfinished(self, reason: str, keep: Collection[str] = ()) -> int:
        """Close rows a crashed daemon left pending or running, but those in ``keep``;
        return how many."""
        result = await self.db.execute(
            "UPDATE sessions SET status = 'failed', success = false, error = $1,"
            " completed_at = now() WHERE status IN ('pending', 'running')"
            " AND NOT id = ANY($2::uuid[])",
            clean_text(reason)[0],
            [uuid.UUID(session_id) for session_id in keep],
        )
        return int(result.split()[-1])
