"""One trace per trigger, with the genuine Claude Code: the trigger call, the session,
and the runtime's own tool calls back into the butler share one trace id."""

from __future__ import annotations

import pytest

from tests.conftest import TEST_DSN
from tests.fakes.model_server import Text, ToolCall
from tests.helpers import InProcessButler, butler_client, free_port, write_butler

pytestmark = pytest.mark.e2e

ENV_TOML = '\n[butler.env]\noptional = ["ANTHROPIC_BASE_URL"]\n'


async def test_trigger_session_and_runtime_tool_calls_share_one_trace(
    roster, schema_name, fake_model, span_exporter, metric_reader, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_model.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake")
    folder = write_butler(roster, "traced", port=free_port(), schema=schema_name, extra=ENV_TOML)
    fake_model.script = [ToolCall("state_set", {"key": "k", "value": "v"}), Text("Traced.")]
    span_exporter.clear()
    async with InProcessButler(folder, database_url=TEST_DSN) as butler:
        async with butler_client(f"{butler.url}/mcp", timeout=120) as client:
            result = (await client.call_tool("trigger", {"prompt": "trace me"})).structured_content
        row = await butler.butler.sessions.get(result["session_id"])
    assert result["success"], result["error"]

    spans = span_exporter.get_finished_spans()
    session = next(s for s in spans if s.name == "butler.session")
    tool = next(s for s in spans if s.name == "butler.tool_call state_set")
    trigger_call = next(
        s
        for s in spans
        if s.attributes.get("gen_ai.tool.name") == "trigger" and s.name != session.name
    )
    trace_id = session.context.trace_id
    assert trigger_call.context.trace_id == trace_id and tool.context.trace_id == trace_id
    assert session.parent.span_id == trigger_call.context.span_id
    assert tool.parent.span_id == session.context.span_id
    assert row["trace_id"] == format(trace_id, "032x")

    data = metric_reader.get_metrics_data()
    points = {
        metric.name: metric.data.data_points
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
    }
    finished = [p for p in points["butler.sessions"] if p.attributes["butler"] == "traced"]
    assert finished[0].attributes["status"] == "succeeded" and finished[0].value >= 1
    assert any(p.attributes["kind"] == "input" for p in points["butler.session.tokens"])
    assert "butler.session.duration" in points and "butler.sessions.queued" in points
