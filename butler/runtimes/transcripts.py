"""Usage of an ended terminal session, read from the files each CLI keeps itself.

A builder's TUI prints no machine-readable stream, but every CLI records its
conversation in its (private) home: Claude Code a project JSONL, Codex a
rollout JSONL, Gemini a chat JSONL, OpenCode a SQLite store, Copilot the
``--usage-output-file`` report. These readers turn each into a
:class:`Transcript`, the way the headless parsers fold a stream. Every reader
is bounded (at most :data:`MAX_BYTES` read per file) and returns None when
the CLI wrote nothing, so a builder that never reached its model records no
usage rather than zeros.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from butler.runtimes import untrusted
from butler.runtimes.base import Transcript, Usage
from butler.runtimes.events import as_int
from butler.runtimes.fold import add_usage as _add

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


def _files(folder: Path, pattern: str) -> list[Path]:
    """The newest :data:`MAX_FILES` regular files matching ``pattern``, oldest first.

    A bounded walk that never enters a linked folder: ``sessions -> /`` in the runtime's
    home would otherwise walk (and stat) the whole filesystem.
    """
    found = sorted(untrusted.find(folder, pattern, MAX_ENTRIES), key=lambda hit: hit[0])
    return [path for _, path in found[-MAX_FILES:]]


def _json_object(path: Path) -> Any:
    """The JSON in a bounded regular file, or None."""
    try:
        return json.loads(untrusted.read(path, MAX_BYTES) or b"null")
    except ValueError:
        return None


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file, skipping lines that are not one (a torn last line)."""
    for line in (untrusted.read(path, MAX_BYTES) or b"").splitlines():
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict):
                yield value


def claude(config_dir: Path) -> Transcript | None:
    """Claude Code's ``projects/<cwd>/<session>.jsonl``: usage per assistant message.

    One message is written once per content block, each line with the same usage:
    the last line of each message id counts, once.
    """
    per_message: dict[str, Usage] = {}
    model = session = None
    cost: float | None = None
    for path in _files(config_dir / "projects", "*/*.jsonl"):
        for entry in _json_lines(path):
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
    return Transcript(total, _claude_cost(config_dir, session) if cost is None else cost,
                      model, session)  # fmt: skip


def _claude_cost(config_dir: Path, session: str | None) -> float | None:
    """The cost Claude Code records in ``.claude.json`` when a session shuts down cleanly
    (``projects[<cwd>].lastCost`` beside ``lastSessionId``); its JSONL has none."""
    state = _json_object(config_dir / ".claude.json")
    projects = state.get("projects") if isinstance(state, dict) else None
    for project in (projects or {}).values() if isinstance(projects, dict) else ():
        if isinstance(project, dict) and project.get("lastSessionId") == session:
            cost = project.get("lastCost")
            return float(cost) if isinstance(cost, int | float) else None
    return None


def codex(codex_home: Path) -> Transcript | None:
    """Codex's rollout: its last ``token_count`` event holds the thread's running total."""
    found: Transcript | None = None
    for path in _files(codex_home / "sessions", "**/rollout-*.jsonl"):
        model = session = None
        total: dict[str, Any] | None = None
        for entry in _json_lines(path):
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


def gemini(gemini_dir: Path) -> Transcript | None:
    """Gemini's ``tmp/<project>/chats/session-*.jsonl``: tokens per model message, by id."""
    per_message: dict[str, Usage] = {}
    model = session = None
    for path in _files(gemini_dir / "tmp", "*/chats/session-*.jsonl"):
        for entry in _json_lines(path):
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


def opencode(data_home: Path) -> Transcript | None:
    """OpenCode's SQLite store: tokens and cost of every assistant message, opened read-only."""
    rows = _opencode_rows(data_home / "opencode" / "opencode.db")
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


def _opencode_rows(database: Path) -> list[tuple[Any, Any]] | None:
    """``(session_id, data)`` of the store's messages, or None.

    The runtime wrote this database: it is opened only when a regular file of at most
    :data:`MAX_DB_BYTES`, with its schema untrusted, ``message`` must be a real table
    (a view could be an endless recursive query: a LIMIT caps rows, not work), every
    query stops after :data:`MAX_QUERY_STEPS`, and oversized ``data`` is skipped.
    """
    try:
        found = os.lstat(database)
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_DB_BYTES:
        return None
    if not untrusted.unlinked(database.parent, 2):  # opencode/, share/, .local/: all the runtime's
        return None
    steps = itertools.count()
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as db:
            db.set_progress_handler(lambda: next(steps) >= MAX_QUERY_STEPS // PROGRESS_EVERY,
                                    PROGRESS_EVERY)  # fmt: skip
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


def copilot(report: Path) -> Transcript | None:
    """Copilot's ``--usage-output-file`` report, written when the CLI exits."""
    data = _json_object(report)
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
