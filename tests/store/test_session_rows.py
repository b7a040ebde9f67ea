"""The session store writes any outcome: cleaned, capped and flagged on the row."""

from __future__ import annotations

from butler.store.sessions import NewSession, SessionOutcome, SessionStore


def outcome(**fields) -> SessionOutcome:
    base = {
        "status": "succeeded",
        "success": True,
        "output": "ok",
        "error": None,
        "tool_calls": [],
        "duration_ms": 5,
    }
    return SessionOutcome(**{**base, **fields})


async def test_tool_calls_with_nul_and_nan_are_stored_flagged(db):
    store = SessionStore(db)
    session_id = await store.create(NewSession("p\x00", "external", "fake"))
    calls = [{"name": "state_set", "arguments": {"key": "a\x00", "n": float("inf")}}]
    stored = await store.complete(session_id, outcome(tool_calls=calls))
    row = await store.get(session_id)
    assert row["tool_calls"] == [{"name": "state_set", "arguments": {"key": "a\ufffd", "n": None}}]
    assert stored.tool_calls == row["tool_calls"]
    # flags from creation and completion are both kept
    assert row["metadata"]["sanitised"] == ["prompt", "tool_calls"]


async def test_fields_over_the_cap_are_cut_with_a_marker_and_flagged(db):
    store = SessionStore(db, max_text_bytes=4096)
    session_id = await store.create(NewSession("p", "external", "fake"))
    calls = [{"name": f"tool{i}", "arguments": {"text": "x" * 100}} for i in range(100)]
    stored = await store.complete(
        session_id, outcome(output="é" * 5000, error="e" * 10_000, tool_calls=calls)
    )
    row = await store.get(session_id)
    assert row["output"] == stored.output
    assert len(row["output"].encode()) <= 4096
    assert row["output"].endswith("bytes cut at the 4096-byte limit]")
    assert row["error"].startswith("eee") and len(row["error"]) <= 4096
    assert 10 < len(row["tool_calls"]) < 100
    assert row["tool_calls"][-1]["butler_truncated"].endswith("more entries past the limit")
    assert row["metadata"]["truncated"] == ["output", "error", "tool_calls"]
