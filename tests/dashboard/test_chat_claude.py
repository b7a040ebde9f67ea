"""The web chat with GENUINE Claude Code against the suite's fake model, in real Chromium.

While Claude runs a tool (a Bash command that waits until the test lets it
go), the page already shows the tool call; its answer then arrives on the
event stream, and a follow-up resumes the same runtime session.
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
from tests.dashboard.conftest import ARTIFACTS, launched, logged_in, run_sql
from tests.fakes.model_server import Text, ToolCall
from tests.helpers import DaemonProcess, free_port, wait_until, write_butler

pytestmark = pytest.mark.e2e

ENV_TOML = '\n[butler.env]\noptional = ["ANTHROPIC_BASE_URL"]\n'
LIVE_MS = 60_000


def test_claudes_tool_call_and_answer_stream_into_the_chat_and_a_follow_up_resumes(
    roster, schema_name, fake_model, _isolated_data_dir
):
    port = free_port()
    folder = write_butler(roster, "health", port=port, schema=schema_name, extra=ENV_TOML)
    temp = Path(tempfile.mkdtemp(prefix="bt-"))  # the daemon's own: its workspaces are here
    env = {
        "ANTHROPIC_BASE_URL": fake_model.url,
        "ANTHROPIC_API_KEY": "sk-fake",
        "BUTLER_DATA_DIR": str(_isolated_data_dir),
        "TMPDIR": str(temp),
    }
    # The tool waits in its session's workspace until the test makes the gate and opens it.
    hold = f'g=$(echo {temp}/butler_health_*)/gate; until [ -p "$g" ]; do sleep 0.1; done; cat "$g"'
    fake_model.script = [ToolCall("Bash", {"command": hold}), Text("Iron 65 mg at 8:00.")]
    try:
        with (
            DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon,
            launched() as browser,
        ):
            page = logged_in(browser, daemon.url, viewport={"width": 390, "height": 844})
            page.goto(f"{daemon.url}/chat/")
            page.fill("#text", "What is due today?")
            page.click("#send")

            answer = page.locator("#messages li.theirs").first
            answer.locator(".steps li", has_text="calling Bash").wait_for(timeout=LIVE_MS)
            assert "writing" in (answer.get_attribute("class") or "")  # still running
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "chat-claude-working.png"))
            workspace = wait_until(lambda: glob.glob(f"{temp}/butler_health_*"), timeout=30)[0]
            gate = Path(workspace) / "gate"
            os.mkfifo(gate)
            with gate.open("w") as opened:  # returns once the tool's cat reads it
                opened.write("go\n")

            answer.and_(page.locator('[data-state="done"]')).wait_for(timeout=LIVE_MS)
            assert answer.locator(".bubble").inner_text() == "Iron 65 mg at 8:00."
            assert answer.get_attribute("data-streamed") == "true"  # came as it was written

            fake_model.script = [Text("And the second dose at 20:00.")]
            page.fill("#text", "and later?")
            page.click("#send")
            second = page.locator("#messages li.theirs").nth(1)
            second.and_(page.locator('[data-state="done"]')).wait_for(timeout=LIVE_MS)
            assert second.locator(".bubble").inner_text() == "And the second dose at 20:00."
            page.screenshot(path=str(ARTIFACTS / "chat-claude.png"))
            resumed = [r.body for r in fake_model.requests if r.api == "anthropic"][-1]
            assert "What is due today?" in json.dumps(resumed["messages"])
    finally:
        shutil.rmtree(temp, ignore_errors=True)

    sessions = run_sql(schema_name, "SELECT * FROM sessions ORDER BY created_at")
    assert [(s["status"], s["trigger_source"]) for s in sessions] == [("succeeded", "route")] * 2
    assert sessions[1]["parent_session_id"] == sessions[0]["id"]  # the same runtime session
