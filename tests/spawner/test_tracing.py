"""Trace context: a span per session, its trace id recorded, TRACEPARENT for the runtime."""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace

from butler.config import RuntimeConfig
from butler.runtimes.registry import get_adapter
from butler.spawner import headless as headless_module
from butler.spawner.spawner import TriggerRequest
from tests.fakes.runtime import FAKE_CLAUDE

pytestmark = pytest.mark.slow


def _fake_cli(make_spawner):
    return make_spawner(
        get_adapter("claude-code", RuntimeConfig(cli_path=str(FAKE_CLAUDE))),
        runtime={"cli_path": str(FAKE_CLAUDE)},
    )


async def test_traceparent_reaches_the_runtime_and_trace_id_is_recorded(
    make_spawner, span_exporter
):
    spawner = _fake_cli(make_spawner)
    with trace.get_tracer("test").start_as_current_span("trigger call") as parent:
        result = await spawner.trigger(TriggerRequest("do it"))
    trace_id = format(parent.get_span_context().trace_id, "032x")
    env = json.loads((spawner.config.config_dir / "fake_claude_run.json").read_text())["env"]
    version, tp_trace, span_id, flags = env["TRACEPARENT"].split("-")
    assert (version, tp_trace) == ("00", trace_id) and len(span_id) == 16
    assert int(flags, 16) & 1  # sampled
    row = await spawner.sessions.get(result.session_id)
    assert row["trace_id"] == trace_id
    session_span = next(
        s
        for s in span_exporter.get_finished_spans()
        if s.name == "butler.session" and s.attributes["butler.session_id"] == result.session_id
    )
    assert session_span.parent.span_id == parent.get_span_context().span_id
    assert format(session_span.context.span_id, "016x") == span_id


async def test_no_trace_context_no_traceparent_and_still_spawned(make_spawner, monkeypatch):
    monkeypatch.setattr(headless_module, "tracer", lambda: trace.NoOpTracer())
    spawner = _fake_cli(make_spawner)
    result = await spawner.trigger(TriggerRequest("do it"))
    assert result.success
    env = json.loads((spawner.config.config_dir / "fake_claude_run.json").read_text())["env"]
    assert "TRACEPARENT" not in env
    assert (await spawner.sessions.get(result.session_id))["trace_id"] is None
