"""The roster's health butler, with the GENUINE Claude Code: its daily review reaches the person.

The roster as shipped (roster/health, roster/shared) plus one channel in
shared/notify.toml; a real ``butler run`` daemon; Claude Code against the
suite's fake model, calling the butler's notify tool; a real mail server.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.fakes.model_server import Text, ToolCall
from tests.helpers import REPO, DaemonProcess, butler_client, eventually, free_port
from tests.servers.mail import MailServer

pytestmark = pytest.mark.e2e

REVIEW = "Daily review: iron 65 mg due at 08:00; dentist on Thursday."


async def test_the_daily_review_and_an_urgent_note_reach_the_person_by_mail(
    tmp_path: Path, schema_name: str, fake_model, mail_server: MailServer
):
    roster = tmp_path / "roster"
    shutil.copytree(REPO / "roster" / "health", roster / "health")
    shutil.copytree(REPO / "roster" / "shared", roster / "shared")
    mail = mail_server.url("health@example.test", "person@example.test")
    (roster / "shared" / "notify.toml").write_text(f'[notify.channels]\nmail = "{mail}"\n')
    fake_model.script = [
        ToolCall("notify", {"message": "Iron is due now.", "priority": "high"}),
        Text(REVIEW),
    ]
    temp = Path(tempfile.mkdtemp(prefix="bt-"))
    env = {
        "ANTHROPIC_BASE_URL": fake_model.url,
        "ANTHROPIC_API_KEY": "sk-fake",
        "BUTLER_DB_SCHEMA": schema_name,
        "TMPDIR": str(temp),
    }
    daemon = DaemonProcess(roster / "health", port=free_port(), database_url=TEST_DSN, env=env)
    try:
        with daemon:
            async with butler_client(f"{daemon.url}/mcp", timeout=180) as owner:
                fired = await owner.call_tool(
                    "schedule_run", {"name": "daily-review", "wait": True}
                )
                result = fired.structured_content["result"]
                assert result["success"] is True, result["error"]
                urgent, review = await mail_server.until(2)

                async def recorded() -> object:
                    """The session once both deliveries' outcomes are written (a mail is
                    received before its sender records that it went)."""
                    got = await owner.call_tool("session_get", {"session_id": result["session_id"]})
                    sending = [
                        d for d in got.structured_content["deliveries"] if d["status"] == "sending"
                    ]
                    return None if sending else got

                session = await eventually(recorded)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert (urgent.subject, urgent.body.strip()) == ("health", "Iron is due now.")
    assert (review.subject, review.body.strip()) == ("health: daily-review", REVIEW)
    row = session.structured_content
    assert [c["name"] for c in row["tool_calls"]] == ["notify"]
    assert [(d["source"], d["status"]) for d in row["deliveries"]] == [
        ("tool", "delivered"),
        ("schedule:daily-review", "delivered"),
    ]
    assert "notification delivered" in daemon.logs()
