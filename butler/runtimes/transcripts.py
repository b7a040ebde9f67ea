"""Usage of an ended terminal session, read from the files each CLI keeps itself.

A builder's TUI prints no machine-readable stream, but every CLI records its
conversation in its (private) home: Claude Code a project JSONL, Codex a
rollout JSONL, Gemini a chat JSONL, OpenCode a SQLite store, Copilot the
``--usage-output-file`` report. These readers turn each into a
:class:`Transcript`, the way the headless parsers fold a stream. Every reader
is bounded (at most :data:`MAX_BYTES` read per file) and returns None when
the CLI wrote nothing, so a builder that never reached its model records no
usage rather than zeros.

The runtime wrote all of it: each reader takes the folder the daemon made
(the home, the workspace) and reads below it only through
:mod:`butler.security.untrusted`, so no link the runtime planted (``.codex``
linked to another session's, ``.claude.json`` to the owner token) is followed.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from butler.runtimes.base import Transcript, Usage
from butler.runtimes.events import as_int
from butler.runtimes.fold import add_usage as _add
from butler.security import untrusted

#: Most of one transcript file read: a long session stays far below it.
MAX_BYTES = 64 * 1024 * 1024
#: Largest OpenCode store opened: a long session's is a few MiB.
MAX_DB_BYTES = 128 * 1024 * 1024
#: Longest message ``data`` decoded: one message's JSON (its parts are stored apart).
MAX_ROW_BYTES = 1024 * 1024
#: SQLite steps a read of the store may take: reading MAX_DB_BYTES of rows is far below.
MAX_QUERY_STEPS = 50_000_000
#: How often (in SQLite steps) the budget is checked.
PROGRESS_EVERY = 10_000
#: Most transcript files read in one home: the newest of those found.
MAX_FILES = 200
#: Most folder entries looked at while finding them (a CLI keeps far fewer).
MAX_ENTRIES = 20_000
#: Where OpenCode keeps its store, under the home (its XDG data folder).
OPENCODE_STORE = ".local/share/opencode/opencode.db"


def _files(home: Path, start: str, pattern: str) -> list[str]:
    """The newest :data:`MAX_FILES` regular files under ``home/start`` matching ``pattern``,
    oldest first, as paths relative to ``home``.

    A bounded walk that never enters a linked folder: ``sessions -> /`` in the runtime's
    home would otherwise walk (and stat) the whole filesystem.
    """
    found = sorted(untrusted.find(home, start, pattern, MAX_ENTRIES), key=lambda hit: hit[0])
    return [path for _, path in found[-MAX_FILES:]]


def _json_object(home: Path, path: str) -> Any:
    """The JSON in a bounded regular file, or None."""
    try:
        return json.loads(untrusted.read_or_none(home, path, MAX_BYTES) or b"null")
    except ValueError:
        return None


def _json_lines(home: Path, path: str) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file, skipping lines that are not one (a torn last line)."""
    for line in (untrusted.read_or_none(home, path, MAX_BYTES) or b"").splitlines():
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                yield value


def claude(home: Path) -> Transcript | None:
    """Claude Code's ``.claude/projects/<cwd>/<session>.jsonl``: usage per assistant message.

    One message is written once per content block, each line with the same usage:
    the last line of each message id counts, once.
    """
    per_message: dict[str, Usage] = {}
    model = session = None
    cost: float | None = None
    for path in _files(home, ".claude/projects", "*/*.jsonl"):
        for entry in _json_lines(home, path):
            message = entry.get("message")
            if entry.get("type") != "assistant" or not isinstance(message, dict):
                continue
            usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
            key = str(message.get("id") or entry.get("uuid"))
            per_message[key] = Usage(
                as_int(usage.get("input_tokens")),
                as_int(usage.get("output_tokens")),
                as_int(usage.get("cache_read_input_tokens")),
                as_int(usage.get("cache_creation_input_tokens")),
            )
            model = message.get("model") or model
            session = entry.get("sessionId") or session
            if isinstance(entry.get("costUSD"), int | float):
                cost = (cost or 0.0) + float(entry["costUSD"])
    if not per_message:
        return None
    total = Usage()
    for usage in per_message.values():
        total = _add(total, usage)
    cost = _claude_cost(home, session) if cost is None else cost
    return Transcript(total, cost, model, session)


def _claude_cost(home: Path, session: str | None) -> float | None:
    """The cost Claude Code records in ``.claude.json`` when a session shuts down cleanly
    (``projects[<cwd>].lastCost`` beside ``lastSessionId``); its JSONL has none."""
    state = _json_object(home, ".claude/.claude.json")
    projects = state.get("projects") if isinstance(state, dict) else None
    for project in (projects or {}).values() if isinstance(projects, dict) else ():
        if isinstance(project, dict) and project.get("lastSessionId") == session:
            cost = project.get("lastCost")
            return float(cost) if isinstance(cost, int | float) else None
    return None


def codex(home: Path) -> Transcript | None:
    """Codex's rollout (``CODEX_HOME`` is ``home/.codex``): its last ``token_count`` event
    holds the thread's running total."""
    found: Transcript | None = None
    for path in _files(home, ".codex/sessions", "**/rollout-*.jsonl"):
        model = session = None
        total: dict[str, Any] | None = None
        for entry in _json_lines(home, path):
            payload = entry.get("payload") if isinstance(entry.get("payload"), dict) else {}
            if entry.get("type") == "session_meta":
                session = payload.get("id") or session
            elif entry.get("type") == "turn_context":
                model = payload.get("model") or model
            elif payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
                total = payload["info"].get("total_token_usage") or total
        if total is not None:
            usage = Usage(
                as_int(total.get("input_tokens")),
                as_int(total.get("output_tokens")),
                as_int(total.get("cached_input_tokens")),
                as_int(total.get("cache_write_input_tokens")),
            )
            found = Transcript(_add(found.usage, usage) if found else usage, None, model, session)
    return found


def gemini(home: Path) -> Transcript | None:
    """Gemini's ``.gemini/tmp/<project>/chats/session-*.jsonl``: tokens per model message."""
    per_message: dict[str, Usage] = {}
    model = session = None
    for path in _files(home, ".gemini/tmp", "*/chats/session-*.jsonl"):
        for entry in _json_lines(home, path):
            session = entry.get("sessionId") or session
            update = entry.get("$set") if isinstance(entry.get("$set"), dict) else {}
            messages = update.get("messages") if isinstance(update.get("messages"), list) else []
            for message in [entry, *messages]:
                tokens = message.get("tokens") if isinstance(message, dict) else None
                if message.get("type") != "gemini" or not isinstance(tokens, dict):
                    continue
                per_message[str(message.get("id"))] = Usage(
                    as_int(tokens.get("input")),
                    as_int(tokens.get("output")) + as_int(tokens.get("thoughts")),
                    as_int(tokens.get("cached")),
                )
                model = message.get("model") or model
    if not per_message:
        return None
    total = Usage()
    for usage in per_message.values():
        total = _add(total, usage)
    return Transcript(total, None, model, session)


def opencode(home: Path) -> Transcript | None:
    """OpenCode's SQLite store (``.local/share/opencode/opencode.db``): tokens and cost of
    every assistant message."""
    rows = _opencode_rows(home)
    if rows is None:
        return None
    total, cost, model, session, seen = Usage(), None, None, None, False
    for session_id, raw in rows:
        with contextlib.suppress(ValueError, TypeError):
            data = json.loads(raw)
            tokens = data.get("tokens")
            if data.get("role") != "assistant" or not isinstance(tokens, dict):
                continue
            cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
            step = Usage(
                as_int(tokens.get("input")),
                as_int(tokens.get("output")) + as_int(tokens.get("reasoning")),
                as_int(cache.get("read")),
                as_int(cache.get("write")),
            )
            total, seen = _add(total, step), True
            if isinstance(data.get("cost"), int | float):
                cost = (cost or 0.0) + float(data["cost"])
            model = data.get("modelID") or model
            session = session_id
    return Transcript(total, cost, model, session) if seen else None


def _opencode_rows(home: Path) -> list[tuple[Any, Any]] | None:
    """``(session_id, data)`` of the store's messages, or None.

    The runtime wrote this database: its file (and its write-ahead log) is copied
    into a private folder through :mod:`butler.security.untrusted` (a regular file of
    at most :data:`MAX_DB_BYTES`, no link on the way) and only the copy is opened. Its
    schema is untrusted: ``message`` must be a real table (a view could be an endless
    recursive query: a LIMIT caps rows, not work), every query stops after
    :data:`MAX_QUERY_STEPS`, and oversized ``data`` is skipped.
    """
    try:
        store = untrusted.read(home, OPENCODE_STORE, MAX_DB_BYTES)
    except OSError:
        return None
    log = untrusted.read_or_none(home, f"{OPENCODE_STORE}-wal", MAX_DB_BYTES) or b""
    with tempfile.TemporaryDirectory(prefix="butler-opencode-") as private:
        copy = Path(private) / "opencode.db"
        copy.write_bytes(store)
        if log:
            copy.with_name("opencode.db-wal").write_bytes(log)
        return _query_store(copy)


def _query_store(database: Path) -> list[tuple[Any, Any]] | None:
    steps = itertools.count()
    try:
        with contextlib.closing(sqlite3.connect(database)) as db:
            db.set_progress_handler(
                lambda: next(steps) >= MAX_QUERY_STEPS // PROGRESS_EVERY, PROGRESS_EVERY
            )
            db.execute("PRAGMA trusted_schema=OFF")
            kinds = db.execute(
                "SELECT type FROM sqlite_master WHERE name = 'message' COLLATE NOCASE"
            ).fetchall()
            if kinds != [("table",)]:
                return None
            return db.execute(
                "SELECT substr(session_id, 1, 200), data FROM message"
                " WHERE length(CAST(data AS BLOB)) <= ? LIMIT 100000",
                (MAX_ROW_BYTES,),
            ).fetchall()
    except sqlite3.Error:
        return None


def copilot(workdir: Path, report: str) -> Transcript | None:
    """Copilot's ``--usage-output-file`` report (``workdir/report``), written when it exits."""
    data = _json_object(workdir, report)
    metrics = data.get("modelMetrics") if isinstance(data, dict) else None
    if not isinstance(metrics, dict) or not metrics:
        return None
    total = Usage()
    for entry in metrics.values():
        usage = entry.get("usage") if isinstance(entry, dict) else None
        if isinstance(usage, dict):
            total = _add(
                total,
                Usage(
                    as_int(usage.get("inputTokens")),
                    as_int(usage.get("outputTokens")),
                    as_int(usage.get("cacheReadTokens")),
                    as_int(usage.get("cacheWriteTokens")),
                ),
            )
    return Transcript(total, None, next(iter(metrics)), None)
