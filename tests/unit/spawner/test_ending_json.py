"""How a run ended crosses from a worker to the daemon as JSON: one type, both ways."""

from __future__ import annotations

import dataclasses
import math

from butler.runtimes.base import RuntimeResult, ToolCall, Usage
from butler.spawner.result import Ending

FULL = RuntimeResult(
    output="done",
    tool_calls=[
        ToolCall("state_set", {"key": "k"}, call_id="c1", error=None, source="runtime"),
        ToolCall("notify", {}, call_id=None, error="refused", source="server"),
    ],
    usage=Usage(input_tokens=11, output_tokens=7, cache_read_tokens=3, cache_write_tokens=2),
    cost_usd=0.25,
    runtime_session_id="rt-1",
    error="half-way",
    num_turns=4,
    model="the-model",
)


def test_every_field_of_a_runtime_result_survives_its_json():
    assert all(
        getattr(FULL, f.name) != f.default
        for f in dataclasses.fields(FULL)
        if f.default is not dataclasses.MISSING
    ), "give every field a value here"
    assert RuntimeResult.from_json(FULL.to_json()) == FULL


def test_a_workers_ending_reads_back_as_it_was_handed():
    end = Ending("succeeded", None, FULL)
    assert Ending.from_json(end.to_json()) == end
    failed = Ending(error="the worker stopped")
    assert Ending.from_json(failed.to_json()) == failed


def test_what_a_worker_forges_is_read_as_data_with_wrong_types_left_out():
    forged = {
        "status": "cancelled",
        "error": ["not", "text"],
        "result": {
            "output": 5,
            "tool_calls": ["x", {"name": 3, "arguments": "no", "id": 9, "source": None}],
            "usage": {"input_tokens": "many", "output_tokens": True, "cache_read_tokens": 2.0},
            "cost_usd": math.inf,
            "num_turns": "7",
            "model": {"a": 1},
        },
    }
    end = Ending.from_json(forged)
    assert end.status == "failed" and end.error is None
    result = end.result
    assert result.output == "" and result.model is None and result.num_turns is None
    assert result.tool_calls == [ToolCall("", {}, None, None, "runtime")]
    assert result.usage == Usage(0, 0, 2, 0)
    assert result.cost_usd is None
    assert Ending.from_json({"result": "not a dict"}).result == RuntimeResult()
