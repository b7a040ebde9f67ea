"""A jailed runtime reaches its person through its butler's notify tool, with no network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.notify.conftest import notify_table
from tests.sandbox.conftest import Jailed, jailed_butler
from tests.servers.mail import MailServer

pytestmark = pytest.mark.slow


def tool_result(body: str) -> dict[str, Any]:
    """The JSON-RPC result in a streamable-HTTP answer (an SSE ``data:`` line, or plain JSON)."""
    for line in body.splitlines():
        if line.startswith("data: "):
            return json.loads(line[len("data: ") :])["result"]
    return json.loads(body)["result"]


async def test_a_jailed_session_reaches_its_person_with_no_egress_of_its_own(
    tmp_path: Path, schema_name: str, mail_server: MailServer
):
    url = mail_server.url("butler@example.test", "person@example.test")
    daemon, folder, data = jailed_butler(tmp_path, schema_name, notify_table({"mail": url}))
    with daemon:
        jailed = Jailed(daemon, folder, data, schema_name)
        arguments = {"message": "Written in the jail.", "title": "Jailed", "attach": "report.txt"}
        plan = {
            "write": [str(folder / "report.txt")],  # the runtime writes its own folder
            "tcp": [["127.0.0.1", mail_server.port]],
            "mcp": {"tool": "notify", "arguments": arguments},
        }
        result = await jailed.run(plan)
        assert result["success"], result["error"]
        report = json.loads(result["output"])
        # The mail server is one connect away for the daemon, and out of the jail's reach.
        assert report["tcp"][f"127.0.0.1:{mail_server.port}"] == "ConnectionRefusedError"
        answer = tool_result(report["mcp"])["structuredContent"]
        assert answer == {"channels": [{"channel": "mail", "status": "delivered", "error": None}]}
        (mail,) = await mail_server.until(1)
        assert mail.subject == "Jailed" and "Written in the jail." in mail.body
        assert mail.attachments() == {"report.txt": b"JAILBREAK\n"}
        refused = await jailed.run(
            {"mcp": {"tool": "notify", "arguments": {"message": "x", "channel": url}}}
        )
    outcome = tool_result(json.loads(refused["output"])["mcp"])
    assert outcome["isError"] is True
    assert outcome["content"][0]["text"] == (
        "notify: channel: expected the name of one of the owner's channels (mail); "
        "a URL, an address or a chat id is never accepted"
    )
    assert len(mail_server.received) == 1
