"""Conformance: the butler's tools as each genuine CLI meets them.

The first session after a daemon starts must see the butler's tools like
every later one (a CLI that asks the model before its MCP server answered
would offer none), and a call to a tool the butler never offered is
recorded on the session's row with the CLI's error, not lost.
"""

from __future__ import annotations

import uuid

import pytest

from tests.conformance.calls import session, state_get, trigger
from tests.conformance.conftest import Conformance
from tests.fakes.model_server import FakeModelServer, Text, ToolCall, UnofferedCall

pytestmark = pytest.mark.e2e


async def test_the_first_session_of_a_fresh_daemon_calls_the_butlers_tool(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    conformance.daemon.stop()
    conformance.daemon.start()
    value = f"first-{uuid.uuid4().hex[:6]}"
    fake_model.script = [ToolCall("state_set", {"key": "first", "value": value}), Text("Set.")]
    result = await trigger(conformance, "Store the value")
    assert result["success"] is True, result["error"]
    assert result["output"] == "Set.", "the model was offered the butler's tools"
    assert await state_get(conformance, "first") == value


async def test_a_call_to_a_tool_never_offered_is_recorded_with_its_error(
    conformance: Conformance, fake_model: FakeModelServer
) -> None:
    invented = UnofferedCall("no_such_tool", args={"key": "x"})
    fake_model.script = [invented, Text("It failed.")]
    result = await trigger(conformance, "Call it")
    assert result["session_id"], result
    row = await session(conformance, result["session_id"])
    calls = [c for c in row["tool_calls"] if c["name"].endswith("no_such_tool")]
    assert calls, row["tool_calls"]
    assert calls[0].get("error"), calls
