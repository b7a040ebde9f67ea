"""Every adapter parses (purely) and the one fold folds, on captured real output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_agent_sdk._internal.message_parser import parse_message  # test-only: replay captures

from butler.runtimes import claude_stream, codex, copilot, gemini, opencode
from butler.runtimes.base import Said, Usage
from butler.runtimes.events import (
    Event,
    Failure,
    ParseEvent,
    Started,
    Text,
    Tokens,
    ToolFailed,
    ToolStarted,
    UnreadableStep,
)
from butler.runtimes.fold import Fold

#: The genuine CLIs' captured output, beside the tests that run those CLIs.
CAPTURES = Path(__file__).parents[2] / "runtimes" / "captures"
PARSERS: dict[str, ParseEvent] = {
    "claude": claude_stream.parse_event,
    "codex": codex.parse_event,
    "copilot": copilot.parse_event,
    "gemini": gemini.parse_event,
    "opencode": opencode.parse_event,
}


def captured_objects() -> list[tuple[str, str, dict]]:
    found = []
    for path in sorted(CAPTURES.glob("*.jsonl")):
        runtime = path.name.split("_")[0]
        for line in path.read_text().splitlines():
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue  # the garbage capture: the fold's business, not the parser's
            if isinstance(data, dict):
                found.append((runtime, path.name, data))
    return found


@pytest.mark.parametrize("runtime", sorted(PARSERS))
def test_parse_event_is_pure_on_every_captured_object(runtime: str) -> None:
    objects = [data for name, _, data in captured_objects() if name == runtime]
    assert objects
    parse = PARSERS[runtime]
    first = [parse(data, "hub") for data in objects]
    # Parsed in reverse order, each object gives the same events: no state between calls.
    again = [parse(data, "hub") for data in reversed(objects)][::-1]
    assert first == again
    assert all(isinstance(events, list) for events in first)
    # Nothing is changed in what it was given.
    assert objects == [data for name, _, data in captured_objects() if name == runtime]


def fold_capture(name: str, fold: Fold) -> Fold:
    for line in (CAPTURES / name).read_text().splitlines():
        fold.feed(line)
    return fold


@pytest.mark.parametrize(
    ("capture", "parse", "model"),
    [
        ("gemini_stream_json_mcp.jsonl", gemini.parse_event, "gemini-3.1-pro-preview"),
        ("copilot_json_mcp.jsonl", copilot.parse_event, "m1"),
        ("claude_stream_json_stdout_mcp.jsonl", claude_stream.parse_event, "claude-sonnet-4-5"),
    ],
)
def test_the_model_a_cli_reports_is_in_the_result(capture: str, parse, model: str) -> None:
    result = fold_capture(capture, Fold(parse, "hub")).result()
    assert result.error is None and result.model == model


def test_claude_cli_lines_and_sdk_messages_fold_the_same() -> None:
    lines = (CAPTURES / "claude_stream_json_stdout_mcp.jsonl").read_text().splitlines()
    raw = claude_stream.claude_fold("hub")
    through_sdk = claude_stream.claude_fold("hub")
    for line in lines:
        data = json.loads(line)
        raw.add(data)
        message = parse_message(data) if data["type"] != "control_response" else None
        if message is not None:
            through_sdk.add(claude_stream.message_dict(message))
    assert raw.result() == through_sdk.result()
    assert raw.result().output == "All done." and raw.result().cost_usd == pytest.approx(0.0012)


def test_a_claude_transcript_line_parses_with_the_same_parser() -> None:
    """Claude Code's transcript (``projects/*.jsonl``) holds the same assistant objects."""
    line = {
        "type": "assistant",
        "sessionId": "s1",
        "message": {
            "model": "claude-opus-4-1",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "t1", "name": "mcp__hub__ping", "input": {"a": 1}},
                {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "ls"}},
            ],
        },
    }
    events = claude_stream.parse_event(line, "hub")
    assert [e.name for e in events if isinstance(e, ToolStarted)] == ["ping", "Bash"]


def scripted(events: list[Event]) -> Fold:
    fold = Fold(lambda data, server: [events[data["i"]]])
    for i in range(len(events)):
        fold.add({"i": i})
    return fold


def test_deltas_join_into_one_message_and_the_last_message_is_the_output() -> None:
    fold = scripted([Text("Hel"), Text("lo", delta=True), Text("  Bye. ")])
    assert fold.result().output == "Bye."
    assert fold.texts == ["Hello", "Bye."]


def test_step_tokens_add_and_totals_replace() -> None:
    step = Usage(1, 2, 3, 4)
    assert scripted([Tokens(step, total=False)] * 2).result().usage == Usage(2, 4, 6, 8)
    assert scripted([Tokens(step), Tokens(step)]).result().usage == step


def test_a_failed_tool_keeps_its_error_and_the_first_failure_wins() -> None:
    fold = scripted(
        [ToolStarted("ping", {}, "c1"), ToolFailed("c1", "no"), Failure("a"), Failure("b")]
    )
    result = fold.result()
    assert result.tool_calls[0].error == "no" and result.error == "a"
    assert scripted([Failure("a"), Failure("b", replaces=True)]).result().error == "b"


def test_progress_reports_the_start_once_and_each_tool() -> None:
    fold = Fold(lambda data, server: [Started(), ToolStarted(data["tool"], verb="ran")])
    assert fold.apply(Started()) == "runtime started"
    assert fold.add({"tool": "x"}) == ["ran x"]
    assert fold.apply(Started()) is None


def test_progress_says_each_text_as_written_in_order_with_the_tools_between() -> None:
    # One object may hold several blocks: every one of them is reported, in order.
    fold = Fold(lambda data, server: data["events"])
    said = fold.add({"events": [Text("Let me look."), ToolStarted("Bash"), Text("Found")]})
    said += fold.add({"events": [Text(" it.", delta=True)]})
    assert said == ["Let me look.", "calling Bash", "Found", " it."]
    assert [type(s) for s in said] == [Said, str, Said, Said]
    assert [s.delta for s in said if isinstance(s, Said)] == [False, False, True]
    assert fold.result().output == "Found it."


def test_an_unreadable_step_with_nothing_in_it_fails_the_run_once() -> None:
    calls: list[int] = []
    fold = Fold(lambda data, server: [UnreadableStep()], on_failure=lambda: calls.append(1))
    fold.add({})
    fold.add({})
    assert "could not be parsed" in (fold.result().error or "") and calls == [1]
