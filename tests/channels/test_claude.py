"""The roster's Telegram bot with GENUINE Claude Code against the suite's fake model.

Claude classifies the message on the home butler, answers it on health,
resumes that same runtime session for the follow-up, and reads an attached
file from its workspace with its own tools.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from tests.channels.conftest import DESCRIPTIONS, reply_count, rows
from tests.conftest import TEST_DSN
from tests.fakes.model_server import Text, ToolCall
from tests.fakes.telegram_api import ALICE, TOKEN
from tests.helpers import free_port, write_butler
from tests.rosters import butler_cli, roster_up, wait_healthy

pytestmark = pytest.mark.e2e

ENV_TOML = '\n[butler.env]\noptional = ["ANTHROPIC_BASE_URL"]\n'


def claude_roster(roster: Path, schemas: dict[str, str], telegram) -> list[int]:
    ports = []
    for name, description in DESCRIPTIONS.items():
        ports.append(free_port())
        folder = write_butler(roster, name, port=ports[-1], schema=schemas[name], extra=ENV_TOML)
        toml = folder / "butler.toml"
        head = f'[butler]\ndescription = "{description}"\n'
        toml.write_text(toml.read_text().replace("[butler]\n", head, 1))
    (roster / "switchboard.toml").write_text(
        '[switchboard]\nhome = "general"\nclassifier_model = "claude-haiku-4-5"\n\n'
        f'[switchboard.channels.telegram]\napi_url = "{telegram.api_url}"\npoll_timeout_s = 2\n'
    )
    return ports


def test_claude_answers_resumes_the_same_session_and_reads_an_attachment(
    roster, schemas, telegram, fake_model, tmp_path, _isolated_data_dir
):
    ports = claude_roster(roster, schemas, telegram)
    temp = Path(tempfile.mkdtemp(prefix="bt-"))  # the daemon's own: its workspaces are found here
    env = {
        **os.environ,
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "ANTHROPIC_BASE_URL": fake_model.url,
        "ANTHROPIC_API_KEY": "sk-fake",
        "BUTLER_DATA_DIR": str(_isolated_data_dir),
        "TMPDIR": str(temp),
    }
    log = tmp_path / "up.log"
    try:
        with roster_up(roster, log, "--database-url", TEST_DSN, env=env) as proc:
            wait_healthy(proc, ports, log)
            code = butler_cli(
                "channels", "pair", "telegram", "-c", str(roster), "--database-url", TEST_DSN
            ).stdout.strip()
            telegram.send(code, user=ALICE)
            reply_count(telegram, ALICE.id, 1)

            fake_model.script = [Text("health")]  # the classifier's answer, and health's
            telegram.send("what is due today?", user=ALICE)
            assert reply_count(telegram, ALICE.id, 2)[1] == "[health] health"

            fake_model.script = [Text("Iron 65 mg at 8:00.")]
            telegram.send("and at what time?", user=ALICE)
            assert reply_count(telegram, ALICE.id, 3)[2] == "[health] Iron 65 mg at 8:00."
            resumed = [r.body for r in fake_model.requests if r.api == "anthropic"][-1]
            assert "what is due today?" in json.dumps(resumed["messages"])

            note = telegram.add_file(b"Take the iron with orange juice.\n", "docs/note.txt")
            document = {
                "file_id": note,
                "file_unique_id": "n",
                "mime_type": "text/plain",
                "file_name": "note.txt",
                "file_size": 33,
            }
            look = f"cat {temp}/butler_health_*/files/attachment-1.txt"
            fake_model.script = [ToolCall("Bash", {"command": look}), Text("Read it.")]
            telegram.send(None, user=ALICE, caption="read this", document=document)
            assert reply_count(telegram, ALICE.id, 4)[3] == "[health] Read it."
            last = [r.body for r in fake_model.requests if r.api == "anthropic"][-1]
            assert "Take the iron with orange juice." in json.dumps(last["messages"])

            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0, log.read_text()
    finally:
        shutil.rmtree(temp, ignore_errors=True)

    health = asyncio.run(rows(schemas["health"], "SELECT * FROM sessions ORDER BY created_at"))
    assert [s["status"] for s in health] == ["succeeded"] * 3
    assert health[1]["parent_session_id"] == health[0]["id"]
    assert health[2]["parent_session_id"] == health[1]["id"]
    general = asyncio.run(rows(schemas["general"], "SELECT * FROM sessions"))
    assert [(s["type"], s["model"]) for s in general] == [("classify", "claude-haiku-4-5")]
