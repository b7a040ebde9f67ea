"""End to end with the GENUINE Claude Code: trigger -> claude -> the butler's own tools.

A real ``butler run`` daemon, the claude binary bundled in claude-agent-sdk,
the suite's fake Anthropic Messages API on 127.0.0.1, and real PostgreSQL.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.fakes.model_server import Text, ToolCall
from tests.helpers import DaemonProcess, butler_client, eventually, free_port, write_butler

pytestmark = pytest.mark.e2e

ENV_TOML = '\n[butler.env]\noptional = ["ANTHROPIC_BASE_URL"]\n'


def _plant_decoys(data_dir: Path, config_dir: Path, decoy_url: str) -> None:
    """A decoy MCP server in every place Claude Code reads user or project servers."""
    decoy = {"mcpServers": {"decoy": {"type": "http", "url": decoy_url}}}
    home = data_dir / "butlers" / "tester" / "home"
    for path in (
        home / ".claude.json",
        home / ".claude" / ".claude.json",
        config_dir / ".mcp.json",
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(decoy))
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"enableAllProjectMcpServers": True}))


@pytest.fixture
def claude_daemon(roster, schema_name, fake_model, mcp_probe, _isolated_data_dir):
    port = free_port()
    folder = write_butler(roster, "tester", port=port, schema=schema_name, extra=ENV_TOML)
    _plant_decoys(_isolated_data_dir, folder, mcp_probe.url)
    env = {
        "ANTHROPIC_BASE_URL": fake_model.url,
        "ANTHROPIC_API_KEY": "sk-fake",
        "BUTLER_CANARY_SECRET": "must-not-leak",
        "BUTLER_DATA_DIR": str(_isolated_data_dir),
    }
    # Its own temporary folder: other tests' butlers named "tester" run beside it.
    temp = Path(tempfile.mkdtemp(prefix="bt-"))
    env["TMPDIR"] = str(temp)
    try:
        with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
            daemon.temp = temp
            yield daemon
    finally:
        shutil.rmtree(temp, ignore_errors=True)


async def test_trigger_runs_claude_which_calls_the_butlers_own_tools(
    claude_daemon, fake_model, mcp_probe
):
    fake_model.script = [
        ToolCall("state_set", {"key": "last_check", "value": "2026-02-09"}),
        Text("Done. 3 tasks checked."),
    ]
    async with butler_client(f"{claude_daemon.url}/mcp", timeout=120) as client:
        called = await client.call_tool("trigger", {"prompt": "Check overdue tasks"})
        result = called.structured_content
        assert result["success"] is True, result["error"]
        assert result["output"] == "Done. 3 tasks checked."
        stored = await client.call_tool("state_get", {"key": "last_check"})
        assert stored.content[0].text == "2026-02-09"
        row = await client.call_tool("session_get", {"session_id": result["session_id"]})
        row = row.structured_content

    assert row["status"] == "succeeded" and row["trigger_source"] == "external"
    assert row["prompt"] == "Check overdue tasks" and row["runtime"] == "claude-code"
    calls = [(c["name"], c["arguments"]) for c in row["tool_calls"]]
    assert calls == [("state_set", {"key": "last_check", "value": "2026-02-09"})]
    assert row["input_tokens"] > 0 and row["output_tokens"] > 0
    assert row["cost_usd"] is not None and row["duration_ms"] > 0
    assert len(row["trace_id"]) == 32 and row["runtime_session_id"]

    # Claude got the butler's system prompt and exactly this butler's tools.
    first = next(r.body for r in fake_model.requests if r.api == "anthropic")
    offered = {t["name"] for t in first.get("tools", [])}
    assert "mcp__tester__state_set" in offered
    assert not any(name.startswith("mcp__decoy__") for name in offered)
    assert "You are a test butler" in json.dumps(first.get("system"))
    assert mcp_probe.calls == []

    # The workspace is gone and nothing of the session is left running.
    leftovers = glob.glob(os.path.join(claude_daemon.temp, "butler_tester_*"))
    assert leftovers == []


async def test_a_claude_session_triggering_itself_forever_queues_and_stops_at_the_chain_depth(
    claude_daemon, fake_model
):
    # Every fresh conversation is answered with the same call: each session triggers again.
    fake_model.script = [ToolCall("trigger", {"prompt": "recurse"}), Text("Done.")]
    async with butler_client(f"{claude_daemon.url}/mcp", timeout=120) as client:
        result = await client.call_tool("trigger", {"prompt": "Try to recurse"})
        result = result.structured_content

        async def all_ended() -> list | None:
            answer = await client.call_tool("session_list", {})
            rows = answer.structured_content["result"]
            return rows if len(rows) == 4 and {r["status"] for r in rows} == {"succeeded"} else None

        await eventually(all_ended, timeout=120)
    assert result["success"] is True and result["output"] == "Done."
    assert [c["name"] for c in result["tool_calls"]] == ["trigger"]
    # The root was answered at once (its slot is the only one), naming what it queued;
    # the default max_chain_depth (3) told the third generation no.
    told = [json.dumps(r.body["messages"]) for r in fake_model.requests if r.api == "anthropic"]
    assert "queued: every session slot is busy" in told[1]
    assert sum("max_chain_depth = 3" in messages for messages in told) == 1
