"""A builder running the GENUINE Claude Code interactive TUI in tmux, fully offline.

The claude binary bundled in claude-agent-sdk, a real daemon, the suite's fake
Anthropic API on 127.0.0.1, real PostgreSQL. The builder's first turn calls the
butler's own ``state_set`` through the locked-down MCP config, and only that
butler's tools are offered (a decoy planted in every user and project config
is not).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.builders.butler_state import state_get
from tests.builders.conftest import Builders, write_builder_butler
from tests.conftest import TEST_DSN
from tests.fakes.model_server import Text, ToolCall
from tests.helpers import DaemonProcess, free_port, wait_until

pytestmark = pytest.mark.e2e

ENV_TOML = '\n[butler.env]\noptional = ["ANTHROPIC_BASE_URL"]\n'


@pytest.fixture
def claude_builders(
    roster, schema_name, repo, tmux_socket, _isolated_data_dir, fake_model, mcp_probe
):
    port = free_port()
    folder = write_builder_butler(
        roster, schema_name, port, runtime={"type": "claude-code"}, extra=ENV_TOML
    )
    decoy = {"mcpServers": {"decoy": {"type": "http", "url": mcp_probe.url}}}
    home = _isolated_data_dir / "butlers" / "tester" / "home"
    for path in (home / ".claude.json", home / ".claude" / ".claude.json", repo / ".mcp.json"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(decoy))
    env = {
        "BUTLER_TMUX_SOCKET": tmux_socket,
        "BUTLER_DATA_DIR": str(_isolated_data_dir),
        "ANTHROPIC_BASE_URL": fake_model.url,
        "ANTHROPIC_API_KEY": "sk-fake-key-0123456789abcdefghij",
        "BUTLER_CANARY": "must-not-leak",
    }
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        yield Builders(daemon, folder, repo, tmux_socket, schema_name, _isolated_data_dir)


def send_keys(builders: Builders, builder: dict, line: str) -> None:
    """Type a line into the builder's terminal, then Enter (a separate key, as a person)."""
    target = f"={builder['tmux_session']}:"
    for keys in (["-l", line], ["Enter"]):
        subprocess.run(
            ["tmux", "-L", builders.socket, "send-keys", "-t", target, *keys], check=True
        )


def test_claude_interactive_builder_calls_its_own_butler(
    claude_builders: Builders, fake_model, mcp_probe
):
    fake_model.script = [
        ToolCall("state_set", {"key": "builders/progress", "value": "started"}),
        Text("Progress recorded; starting on the bug."),
    ]
    builder = claude_builders.spawn("Fix the login bug")
    done_text = "Progress recorded; starting on the bug."
    missing = "no offered tool matches 'state_set'"

    def answered() -> str | None:
        shown = claude_builders.screen(builder)
        return shown if done_text in shown or missing in shown else None

    shown = wait_until(answered, timeout=90)
    if missing in shown:
        # Claude Code 2.1.332's TUI can start its first turn before it has listed the
        # butler's tools (a race inside the CLI, seen on a loaded machine); the next
        # turn has them. A person would simply ask again, and so does this test.
        send_keys(claude_builders, builder, "Record the progress now")
        shown = claude_builders.wait_screen(builder, done_text, 60)
    assert "Fix the login bug" in shown

    assert state_get(claude_builders.daemon.url, "builders/progress") == "started"

    first = next(
        r.body
        for r in fake_model.requests
        if r.api == "anthropic" and any("mcp__" in t["name"] for t in r.body.get("tools", []))
    )
    offered = {tool["name"] for tool in first.get("tools", [])}
    assert "mcp__tester__state_set" in offered
    assert not any(name.startswith("mcp__decoy__") for name in offered)
    system = json.dumps(first.get("system"))
    assert "You are the test butler." in system and "ROLE: builder. Commit often." in system
    assert mcp_probe.calls == []
    key_seen = {h.get("x-api-key") for h in fake_model.headers if h.get("x-api-key")}
    assert key_seen == {"sk-fake-key-0123456789abcdefghij"}

    # A person ends the session; the daemon records it with the call the server saw.
    send_keys(claude_builders, builder, "/exit")

    def ended() -> dict | None:
        done = claude_builders.cli("builders", "list", "--json")
        (found,) = json.loads(done.stdout)
        return found if found["status"] != "running" else None

    finished = wait_until(ended, timeout=60)
    assert finished["status"] == "succeeded", finished["error"]
    row = claude_builders.row(builder["session_id"])
    calls = [(c["name"], c["arguments"]) for c in row["tool_calls"]]
    assert calls == [("state_set", {"key": "builders/progress", "value": "started"})]
