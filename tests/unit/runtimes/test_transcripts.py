"""Usage of an ended terminal session, read from each CLI's own files (shapes as the
genuine CLIs write them; tests/builders/test_tui_builders.py reads the real ones)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from pathlib import Path

from butler.runtimes import transcripts
from butler.runtimes.base import Usage

#: The genuine CLIs' captured output, beside the tests that run those CLIs.
CAPTURES = Path(__file__).parents[2] / "runtimes" / "captures"
STORE = transcripts.OPENCODE_STORE


def jsonl(path: Path, *entries: object, tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail)
    return path


def claude_line(message_id: str, block: str, output: int) -> dict:
    usage = {"input_tokens": 100, "output_tokens": output, "cache_read_input_tokens": 10,
             "cache_creation_input_tokens": 5}  # fmt: skip
    message = {"id": message_id, "model": "claude-x", "usage": usage, "content": [block]}
    return {"type": "assistant", "sessionId": "s-1", "message": message}


def test_claude_counts_each_message_once_though_written_per_block(tmp_path):
    jsonl(
        tmp_path / ".claude" / "projects" / "-repo-.builders-x" / "s-1.jsonl",
        {"type": "user", "message": {"role": "user", "content": "Fix it"}},
        claude_line("m1", "tool_use", 30),
        claude_line("m1", "text", 30),  # the same message again, one line per block
        claude_line("m2", "text", 20),
        tail='{"type": "assistant", "mess',  # a torn last line: the CLI was killed
    )
    found = transcripts.claude(tmp_path)
    assert found is not None
    assert found.usage == Usage(200, 50, 20, 10)
    assert (found.model, found.session_id, found.cost_usd) == ("claude-x", "s-1", None)
    # The cost is where the TUI records it at a clean exit, beside the session's id.
    projects = {"/other": {"lastSessionId": "s-0", "lastCost": 9.0},
                "/repo/.builders/x": {"lastSessionId": "s-1", "lastCost": 0.001082}}  # fmt: skip
    (tmp_path / ".claude" / ".claude.json").write_text(json.dumps({"projects": projects}))
    assert transcripts.claude(tmp_path).cost_usd == 0.001082


def test_codex_takes_the_last_running_total_of_the_rollout(tmp_path):
    def count(total_in: int, total_out: int) -> dict:
        usage = {"input_tokens": total_in, "cached_input_tokens": 20, "output_tokens": total_out}
        payload = {"type": "token_count", "info": {"total_token_usage": usage}}
        return {"type": "event_msg", "payload": payload}

    jsonl(
        tmp_path
        / ".codex"
        / "sessions"
        / "2026"
        / "11"
        / "26"
        / "rollout-2026-11-26T06-20-38-t1.jsonl",
        {"type": "session_meta", "payload": {"id": "t1"}},
        {"type": "turn_context", "payload": {"model": "fake-model"}},
        count(120, 30),
        count(240, 60),
        {"type": "event_msg", "payload": {"type": "token_count", "info": None}},
    )
    found = transcripts.codex(tmp_path)
    assert found is not None and found.usage == Usage(240, 60, 20, 0)
    assert (found.model, found.session_id) == ("fake-model", "t1")


def test_gemini_takes_each_messages_last_tokens(tmp_path):
    tokens = {"input": 120, "output": 30, "cached": 10, "thoughts": 2, "total": 152}
    first = {"id": "a", "type": "gemini", "tokens": tokens, "model": "fake-model"}
    jsonl(
        tmp_path / ".gemini" / "tmp" / "w1" / "chats" / "session-2026-11-26T06-21-b5.jsonl",
        {"sessionId": "b5", "kind": "main"},
        {"id": "u", "type": "user", "content": [{"text": "Fix it"}]},
        first,
        {"$set": {"messages": [first]}},  # rewritten in place: counted once
        {"id": "b", "type": "gemini", "tokens": tokens, "model": "fake-model"},
    )
    found = transcripts.gemini(tmp_path)
    assert found is not None and found.usage == Usage(240, 64, 20, 0)
    assert (found.model, found.session_id) == ("fake-model", "b5")


def test_opencode_sums_assistant_messages_of_its_store(tmp_path):
    (tmp_path / STORE).parent.mkdir(parents=True)
    with sqlite3.connect(tmp_path / STORE) as db:
        db.execute("CREATE TABLE message (id text, session_id text, data text)")
        step = {"role": "assistant", "cost": 0.25, "modelID": "fake-model",
                "tokens": {"input": 110, "output": 30, "reasoning": 1,
                           "cache": {"read": 10, "write": 0}}}  # fmt: skip
        rows = [("m0", "ses_1", json.dumps({"role": "user"})), ("m1", "ses_1", json.dumps(step)),
                ("m2", "ses_1", json.dumps(step)), ("m3", "ses_1", "not json")]  # fmt: skip
        db.executemany("INSERT INTO message VALUES (?, ?, ?)", rows)
    found = transcripts.opencode(tmp_path)
    assert found is not None and found.usage == Usage(220, 62, 20, 0)
    assert (found.cost_usd, found.model, found.session_id) == (0.5, "fake-model", "ses_1")


def test_copilot_reads_its_usage_report(tmp_path):
    report = shutil.copy(CAPTURES / "copilot_usage_output_file.json", tmp_path / "u.json")
    found = transcripts.copilot(tmp_path, Path(report).name)
    assert found is not None and found.usage == Usage(300, 60, 30, 0)
    assert found.model == "m1"


def test_nothing_written_is_no_usage_rather_than_zeros(tmp_path):
    assert transcripts.claude(tmp_path) is None
    assert transcripts.codex(tmp_path) is None
    assert transcripts.gemini(tmp_path) is None
    assert transcripts.opencode(tmp_path) is None
    (tmp_path / STORE).parent.mkdir(parents=True)
    (tmp_path / STORE).write_text("not a database")
    assert transcripts.opencode(tmp_path) is None
    assert transcripts.copilot(tmp_path, "missing.json") is None


def test_a_fifo_or_a_link_the_runtime_planted_neither_hangs_nor_floods_the_reader(tmp_path):
    """The runtime writes its own home: its files are read bounded, never through a link."""
    claude = tmp_path / ".claude"
    jsonl(claude / "projects" / "p" / "s-1.jsonl", claude_line("m1", "text", 20))
    (claude / "projects" / "q").mkdir(parents=True)
    os.mkfifo(claude / "projects" / "q" / "s-2.jsonl")  # opening it to read would wait for a writer
    os.symlink("/dev/zero", claude / ".claude.json")  # endless: where the cost would be
    rollout = tmp_path / ".codex" / "sessions" / "2026"
    rollout.mkdir(parents=True)
    os.mkfifo(rollout / "rollout-1.jsonl")
    (tmp_path / STORE).parent.mkdir(parents=True)
    os.mkfifo(tmp_path / STORE)
    os.symlink("/dev/zero", tmp_path / "usage.json")
    found: list[object] = []

    def read_all() -> None:
        found.append(transcripts.claude(tmp_path))
        found.append(transcripts.codex(tmp_path))
        found.append(transcripts.opencode(tmp_path))
        found.append(transcripts.copilot(tmp_path, "usage.json"))

    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "a planted FIFO or /dev/zero held the transcript reader"
    claude, *others = found
    assert claude is not None and claude.usage.output_tokens == 20 and claude.cost_usd is None
    assert others == [None, None, None]


def rollout(path: Path, input_tokens: int) -> Path:
    usage = {"input_tokens": input_tokens, "output_tokens": 1}
    count = {"type": "token_count", "info": {"total_token_usage": usage}}
    return jsonl(path, {"type": "event_msg", "payload": count})


def test_linked_folders_in_the_home_are_not_walked(tmp_path):
    """A home's ``sessions -> /`` would walk the whole filesystem: no linked folder is entered,
    so transcripts planted outside the home through one are not read either."""
    elsewhere = tmp_path / "elsewhere"
    rollout(elsewhere / "rollout-1.jsonl", 7)
    jsonl(elsewhere / "s-1.jsonl", claude_line("m1", "text", 20))
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    os.symlink(elsewhere, codex_home / "sessions")
    assert transcripts.codex(home) is None
    (codex_home / "sessions").unlink()
    rollout(codex_home / "sessions" / "2026" / "rollout-2.jsonl", 3)
    os.symlink(elsewhere, codex_home / "sessions" / "2026" / "more")
    os.symlink(elsewhere / "rollout-1.jsonl", codex_home / "sessions" / "rollout-9.jsonl")
    assert transcripts.codex(home).usage.input_tokens == 3
    (home / ".claude" / "projects").mkdir(parents=True)
    os.symlink(elsewhere, home / ".claude" / "projects" / "p")
    assert transcripts.claude(home) is None


def test_finding_transcripts_looks_at_a_bounded_number_of_entries(tmp_path, monkeypatch):
    """However many entries the runtime makes, the walk stops after MAX_ENTRIES of them."""
    monkeypatch.setattr(transcripts, "MAX_ENTRIES", 50)
    for day in range(30):  # 30 folders, then one rollout in each: 60 entries
        rollout(tmp_path / ".codex" / "sessions" / f"{day:02}" / f"rollout-{day}.jsonl", 1)
    found = transcripts.codex(tmp_path)
    assert found is not None and found.usage.input_tokens == 20  # 50 entries: 30 + 20


def opencode_store(home: Path, *schema: str) -> Path:
    (home / STORE).parent.mkdir(parents=True)
    with sqlite3.connect(home / STORE) as db:
        for statement in schema:
            db.execute(statement)
    return home / STORE


STEP = {"role": "assistant", "tokens": {"input": 5, "output": 1}}


def test_a_hostile_opencode_store_returns_promptly_with_nothing(tmp_path):
    """The runtime wrote the store: ``message`` as a view over an endless recursive query
    would hold the daemon (LIMIT caps rows, not work); it is not a table, so not read."""
    endless = (
        "CREATE VIEW message AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
        " SELECT 's' AS session_id, '{}' AS data FROM n WHERE i < 0"
    )
    opencode_store(tmp_path, endless)
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.append(transcripts.opencode(tmp_path)),
                              daemon=True)  # fmt: skip
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "a recursive view named message held the reader"
    assert found == [None]


def test_an_opencode_query_past_its_budget_is_abandoned(tmp_path, monkeypatch):
    store = opencode_store(tmp_path, "CREATE TABLE message (session_id text, data text)")
    with sqlite3.connect(store) as db:
        db.executemany("INSERT INTO message VALUES ('s', ?)", [(json.dumps(STEP),)] * 50)
    assert transcripts.opencode(tmp_path).usage.input_tokens == 250
    # A budget smaller than the read: the query is stopped, not left to run.
    monkeypatch.setattr(transcripts, "PROGRESS_EVERY", 1)
    monkeypatch.setattr(transcripts, "MAX_QUERY_STEPS", 20)
    assert transcripts.opencode(tmp_path) is None


def test_oversized_opencode_rows_and_stores_are_not_read(tmp_path, monkeypatch):
    store = opencode_store(tmp_path, "CREATE TABLE message (session_id text, data text)")
    huge = json.dumps({**STEP, "pad": "x" * transcripts.MAX_ROW_BYTES})
    with sqlite3.connect(store) as db:
        db.executemany("INSERT INTO message VALUES ('s', ?)", [(json.dumps(STEP),), (huge,)])
    assert transcripts.opencode(tmp_path).usage.input_tokens == 5  # the huge row skipped
    monkeypatch.setattr(transcripts, "MAX_DB_BYTES", store.stat().st_size - 1)
    assert transcripts.opencode(tmp_path) is None


def test_a_linked_folder_above_the_transcripts_is_not_followed(tmp_path):
    """``.codex`` or ``.local`` linked to another session's would have its usage recorded as
    this builder's: no folder the runtime made between its home and the files is a link."""
    other = tmp_path / "other-session"
    rollout(other / ".codex" / "sessions" / "2026" / "rollout-1.jsonl", 7)
    store = opencode_store(other, "CREATE TABLE message (session_id, data)")
    with sqlite3.connect(store) as db:
        db.execute("INSERT INTO message VALUES ('s', ?)", (json.dumps(STEP),))
    assert transcripts.codex(other) is not None
    assert transcripts.opencode(other) is not None
    home = tmp_path / "home"
    home.mkdir()
    os.symlink(other / ".codex", home / ".codex")
    os.symlink(other / ".local", home / ".local")
    assert transcripts.codex(home) is None
    assert transcripts.opencode(home) is None
