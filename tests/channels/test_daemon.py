"""``butler up`` with the roster's single Telegram bot, end to end, as a person would use it.

A real daemon process, each butler in its own schema, the ``command`` runtime,
``butler channels pair`` from the command line, and a phone (the fake Bot
API's test side) that pairs, asks, follows up, and a stranger who is ignored.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from tests.channels.conftest import reply_count, rows, switchboard_toml, write_roster
from tests.conftest import TEST_DSN
from tests.fakes.telegram_api import ALICE, MALLORY, TOKEN
from tests.helpers import get_json
from tests.rosters import butler_cli, roster_up, table_rows, wait_healthy

pytestmark = pytest.mark.slow


def test_what_is_due_today_from_a_phone_reaches_health_through_the_rosters_one_bot(
    roster, schemas, telegram, tmp_path
):
    folders = write_roster(roster, schemas)
    switchboard_toml(roster, telegram)
    ports = [
        int(f.joinpath("butler.toml").read_text().split("port = ")[1].split()[0])
        for f in folders.values()
    ]
    env = {**os.environ, "TELEGRAM_BOT_TOKEN": TOKEN, "DATABASE_URL": TEST_DSN}
    log = tmp_path / "up.log"
    with roster_up(roster, log, "--database-url", TEST_DSN, env=env) as proc:
        wait_healthy(proc, ports, log)
        paired = butler_cli(
            "channels", "pair", "telegram", "--config", str(roster), "--database-url", TEST_DSN
        )
        assert paired.returncode == 0, paired.stderr
        assert "within 10 minutes" in paired.stderr

        telegram.send(paired.stdout.strip(), user=ALICE)
        assert reply_count(telegram, ALICE.id, 1)[0].startswith("Paired, Alice.")
        telegram.send("what is due today?", user=ALICE)
        assert reply_count(telegram, ALICE.id, 2)[1] == "[health] health heard: what is due today?"
        telegram.send("and tomorrow?", user=ALICE)
        follow_up = reply_count(telegram, ALICE.id, 3)[2]
        assert follow_up == "[health] health heard: and tomorrow?\nearlier turns: 2"
        telegram.send("what is due today?", user=MALLORY)
        assert reply_count(telegram, MALLORY.id, 1) == [
            "This bot answers only people paired with it; ask its owner for a pairing code."
        ]

        telegram.send("<script>alert(1)</script> & more", user=ALICE)
        reply_count(telegram, ALICE.id, 4)

        general_port = ports[list(folders).index("general")]
        general = f"http://127.0.0.1:{general_port}"
        status, listing = get_json(f"{general}/api/conversations")
        assert status == 200 and listing["html"].count('<tr data-conversation="') == 1
        [refused] = listing["html"].split("<tr data-refused=")[1:]
        assert f"<td>{MALLORY.id}</td><td>not paired</td>" in refused  # why, never what
        conversation = listing["html"].split('<tr data-conversation="')[1].split('"')[0]
        status, thread = get_json(f"{general}/api/conversations/{conversation}")
        html = thread["html"]
        assert status == 200 and "telegram · sender 1001 · with health" in html
        assert html.count('class="message message-in"') == 3
        assert html.count('class="message message-out"') == 3
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in html
        assert "<script>" not in html
        assert f'href="http://127.0.0.1:{ports[0]}/sessions/' in html

        status, body = get_json(f"{general}/api/status")
        assert status == 200
        [channel] = body["channels"]
        assert channel["channel"] == "telegram" and channel["status"] == "connected"
        assert channel["switchboard"] is True
        status, page = get_json(f"{general}/api/roster")
        assert status == 200
        assert (
            '<span class="channel" data-status="connected">telegram connected</span>'
            in page["html"]
        )
        listed = butler_cli("list", "--roster", str(roster))
        assert table_rows(listed.stdout)["general"][-1] == "telegram connected"
        assert table_rows(listed.stdout)["health"][-1] == "-"

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()

    sessions = asyncio.run(rows(schemas["health"], "SELECT * FROM sessions ORDER BY created_at"))
    assert [s["trigger_source"] for s in sessions] == ["route", "route", "route"]
    first, second, _ = (s["metadata"] for s in sessions)
    assert first["channel"] == second["channel"] == "telegram"
    assert first["sender"] == second["sender"] == str(ALICE.id)
    assert first["thread"] == second["thread"] == str(ALICE.id)
    assert first["conversation_id"] == second["conversation_id"]
    classify = asyncio.run(rows(schemas["general"], "SELECT type FROM sessions"))
    assert [c["type"] for c in classify] == ["classify"]
    strangers = asyncio.run(
        rows(
            schemas["general"], f"SELECT status FROM channel_messages WHERE sender = '{MALLORY.id}'"
        )
    )
    assert strangers == [{"status": "refused"}]
