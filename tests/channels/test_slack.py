"""The roster's Slack app over Socket Mode: pairing, threads, files, reconnects, rate limits.

slack-sdk (its ``AsyncWebClient`` and aiohttp ``SocketModeClient``, unchanged)
talks to tests/fakes/slack_api.py over real HTTP and a real WebSocket; every
answer is a real session of the ``command`` runtime recorded in PostgreSQL.

Why the fake can stand for Slack. What it serves was checked against
Slack's documentation (the Socket Mode implementation guide, the Events API
and the method references of ``auth.test``, ``apps.connections.open``,
``chat.postMessage``, ``files.info``, ``users.info``,
``assistant.threads.setStatus``, and the rate-limits page) and against how
slack-sdk 3.x reads it (``slack_sdk/socket_mode/aiohttp``, ``async_client``,
``web/async_base_client``, ``http_retry``):

- ``apps.connections.open`` takes the app-level token only (a bot token gets
  ``not_allowed_token_type``, anything else ``invalid_auth``) and returns a
  one-time ``wss`` URL with a ticket; every other method takes the bot token
  as ``Authorization: Bearer``. Errors are HTTP 200 with ``ok: false``, as
  Slack answers; a rate limit is HTTP 429 with ``Retry-After`` in seconds,
  which is what slack-sdk's ``AsyncRateLimitErrorRetryHandler`` reads.
- On the socket: ``hello`` first (with ``num_connections``, ``debug_info``,
  ``connection_info``); each event in an envelope of type ``events_api`` with
  ``envelope_id``, ``payload`` (the Events API ``event_callback``: ``team_id``,
  ``api_app_id``, ``event``, ``event_id``, ``authorizations``),
  ``accepts_response_payload``, ``retry_attempt``, ``retry_reason``; the app
  acknowledges with ``{"envelope_id": ...}``; one not acknowledged within the
  timeout (three seconds at Slack, shorter here where a test says so) is sent
  again, up to three times; ``disconnect`` with ``refresh_requested`` precedes
  the closing of a connection, and the client opens a new one itself.
- Events as Slack sends them: ``message`` with ``channel_type`` (``im`` for a
  direct message), ``thread_ts`` and ``parent_user_id`` in a thread, subtype
  ``file_share`` with ``files`` (``id``, ``mimetype``, ``size``,
  ``url_private_download``); a mention in a channel comes twice, as
  ``app_mention`` and as ``message``, with the same ``ts``. Text arrives with
  ``&``, ``<``, ``>`` escaped, and the app must escape them when it posts.
- Shared files are served to the bot token only.
- A file the app sends goes as slack-sdk's ``files_upload_v2`` makes it (the
  only upload Slack still takes): ``files.getUploadURLExternal`` with the
  name and length, the bytes POSTed as the body to the URL it returns (which
  must be that length), then ``files.completeUploadExternal`` with the file
  ids and titles (a JSON list), ``channel_id``, ``thread_ts`` and
  ``initial_comment``.

What it leaves out: Block Kit, slash commands and interactivity (the channel
acknowledges and ignores those envelopes), Enterprise Grid, pagination, and
the 10-connection limit per app.
"""

from __future__ import annotations

import pytest

from butler.channels.base import Misconfigured
from butler.channels.slack import SlackChannel
from butler.config.channels import SlackSettings
from tests.channels.chats import SLACK_TOKENS as TOKENS
from tests.channels.chats import slack_paired as paired
from tests.channels.chats import slack_said as said
from tests.channels.chats import slack_started as started
from tests.channels.chats import slack_switchboard
from tests.channels.conftest import write_roster
from tests.fakes.slack_api import (
    ALICE,
    APP_TOKEN,
    BOT_TOKEN,
    BOT_USER,
    GENERAL,
    FakeSlack,
)
from tests.helpers import eventually

#: Each answer runs the command runtime: a real process.
pytestmark = pytest.mark.slow


def channel_of(slack: FakeSlack, app_token: str = APP_TOKEN) -> SlackChannel:
    settings = SlackSettings(api_url=f"{slack.url}/api", files_url=slack.url)

    async def need(name: str) -> str:
        return app_token

    return SlackChannel(settings, need)


async def test_a_person_paired_on_slack_asks_in_a_direct_message_and_is_answered_there(
    roster, schema_name, slack, start_roster
):
    running = await started(roster, schema_name, slack, start_roster)

    slack.say("/health is 2 < 3 & today due?")
    answer = (await said(slack, ALICE.dm, 2))[1]

    # Slack escapes &, <, > in what a person writes and wants them escaped in what is posted.
    assert answer == "[health] health heard: is 2 &lt; 3 &amp; today due?"
    session = (await running.sessions())[-1]
    assert session["prompt"].endswith("is 2 < 3 & today due?")
    assert session["metadata"]["sender"] == ALICE.id and session["metadata"]["chat"] == ALICE.dm
    # "is thinking…" under the person's message while the session ran, cleared by the answer.
    await slack.until(lambda: slack.statuses[-1]["status"] == "")
    assert slack.statuses[0]["status"] == "is thinking…"
    await slack.until(lambda: len(slack.acks) == len(slack.envelopes))  # all acknowledged
    assert {e["retry_attempt"] for e in slack.envelopes} == {0}


async def test_a_file_a_session_sends_is_shared_in_the_slack_conversation(
    roster, schema_name, slack, start_roster, serve_tools
):
    plan = b"\x89PNG\r\n\x1a\n" + bytes(range(100))
    folders = write_roster(roster, schema_name)
    (folders["health"] / "plan.png").write_bytes(plan)
    slack_switchboard(roster, slack)
    running = await start_roster(TOKENS)
    await serve_tools(running)
    await paired(running, slack)

    slack.say("/health SEND plan.png")
    answer = (await said(slack, ALICE.dm, 2))[1]

    assert answer.endswith(f"sent plan.png (image/png, {len(plan)} bytes) to the slack chat")
    [shared] = slack.shared
    assert (shared["channel"], shared["filename"], shared["data"]) == (ALICE.dm, "plan.png", plan)
    assert shared["initial_comment"] == "plan.png, as asked"


async def test_commands_on_slack_are_answered_by_the_daemon_without_a_session(
    roster, schema_name, slack, start_roster
):
    running = await started(roster, schema_name, slack, start_roster)

    slack.say(" /butlers")  # a space first: Slack takes a leading slash as its own command
    butlers = (await said(slack, ALICE.dm, 2))[1]
    slack.say(" /status")
    status = (await said(slack, ALICE.dm, 3))[2]

    assert butlers.startswith("Butlers that answer here:\n/general")
    assert status.startswith("general: not answering anything in this conversation.")
    assert await running.sessions() == []


async def test_a_mention_in_a_channel_is_answered_in_its_thread_and_a_follow_up_there_continues(
    roster, schema_name, slack, start_roster
):
    running = await started(roster, schema_name, slack, start_roster)

    root = slack.say(f"<@{BOT_USER}> /health what is due today?", channel=GENERAL)
    first = (await said(slack, GENERAL, 1))[0]
    slack.say("and tomorrow?", channel=GENERAL, thread_ts=root)
    second = (await said(slack, GENERAL, 2))[1]

    assert first == "[health] health heard: what is due today?"
    assert second == "[health] health heard: and tomorrow?\nearlier turns: 2"
    assert [p.get("thread_ts") for p in slack.posted if p["channel"] == GENERAL] == [root, root]
    # The mention came twice (app_mention and message): one session answered it.
    sessions = await running.sessions()
    assert [s["type"] for s in sessions] == ["channel", "channel"]
    assert len({s["metadata"]["conversation_id"] for s in sessions}) == 1
    assert sessions[0]["metadata"]["thread"] == root


async def test_a_shared_file_is_read_and_one_over_the_limit_is_refused_in_one_line(
    roster, schema_name, slack, start_roster
):
    running = await started(roster, schema_name, slack, start_roster)
    notes = slack.add_file(b"Iron 65 mg at 8:00.\n", "../meds.txt", "text/plain")
    huge = slack.add_file(b"x", "scan.pdf", "application/pdf", size=50 * 1024 * 1024)

    slack.say("/health what does it say?", files=[notes])
    slack.say("/health and this?", files=[huge])
    read, refused = (await said(slack, ALICE.dm, 3))[1:]

    assert (
        read
        == "[health] health heard: what does it say?\nattachment-1.txt says: Iron 65 mg at 8:00."
    )
    assert refused == "Not accepted: the file is larger than the 10240 KiB an attachment may be."
    assert len(await running.sessions()) == 1


async def test_a_lost_connection_is_reopened_and_a_refresh_moves_without_a_reconnect(
    roster, schema_name, slack, start_roster
):
    running = await started(roster, schema_name, slack, start_roster)

    slack.refresh()  # Slack asks for a new connection: the client moves on its own
    await slack.until(lambda: slack.connections == 2)
    slack.say("/health after the refresh")
    assert (await said(slack, ALICE.dm, 2))[1] == "[health] health heard: after the refresh"
    assert running.state("slack")["reconnects"] == 0

    slack.drop()  # the network fails: the service notices and connects again
    slack.say("/health while it was away")
    await eventually(lambda: running.state("slack")["reconnects"] == 1)
    answer = (await said(slack, ALICE.dm, 3))[2]

    assert answer.startswith("[health] health heard: while it was away")
    assert running.state("slack")["status"] == "connected"
    assert slack.connections == 3


async def test_an_envelope_is_acknowledged_only_at_the_next_read_so_slack_sends_it_again(slack):
    slack.ack_timeout_s = 0.5
    channel = channel_of(slack)
    await channel.connect(BOT_TOKEN, None)
    try:
        slack.say("hello")
        first = (await channel.receive()).messages
        # Not yet read again (so not yet recorded, for all the channel knows): not acknowledged.
        await slack.until(lambda: any(e["retry_attempt"] == 1 for e in slack.envelopes))
        unacknowledged = list(slack.acks)
        again = (await channel.receive()).messages
        # The acknowledgement is a frame on the socket: Slack has it once it has read it.
        await slack.until(lambda: bool(slack.acks))
    finally:
        await channel.close()

    assert unacknowledged == []
    assert [m.external_id for m in first] == [m.external_id for m in again]
    assert slack.acks == [slack.envelopes[0]["envelope_id"]]
    assert slack.envelopes[1]["retry_reason"] == "timeout"


async def test_a_rate_limited_post_waits_out_retry_after_and_is_posted_once(slack):
    channel = channel_of(slack)
    await channel.connect(BOT_TOKEN, None)
    try:
        slack.say("hello")
        message = (await channel.receive()).messages[0]
        slack.rate_limit("chat.postMessage", times=1, retry_after=1)
        sent = await channel.send(message, "answer")
    finally:
        await channel.close()

    assert slack.texts(ALICE.dm) == ["answer"]
    assert sent == f"{ALICE.dm}:{slack.posted[0]['ts']}"
    assert slack.calls.count("chat.postMessage") == 2


@pytest.mark.parametrize(
    ("app_token", "line"),
    [
        ("xapp-wrong", "slack: the app-level token was refused (invalid_auth)"),
        (BOT_TOKEN, "slack: the app-level token was refused (not_allowed_token_type)"),
    ],
)
async def test_a_wrong_app_token_is_refused_in_one_line_naming_it(slack, app_token, line):
    channel = channel_of(slack, app_token)
    try:
        with pytest.raises(Misconfigured) as refused:
            await channel.connect(BOT_TOKEN, None)
    finally:
        await channel.close()
    assert str(refused.value) == line


async def test_what_slack_gave_up_delivering_while_the_daemon_was_stopped_is_read_back(
    roster, schema_name, slack, start_roster
):
    first = await started(roster, schema_name, slack, start_roster)
    for service in first.services.values():
        await service.stop(5)
    slack.say("/health said while the daemon was stopped", delivered=False)

    second = await start_roster(TOKENS)
    answer = (await said(slack, ALICE.dm, 2))[1]

    assert answer == "[health] health heard: said while the daemon was stopped"
    query = "SELECT body FROM channel_messages WHERE direction = 'in' ORDER BY id"
    bodies = [r["body"] for r in await second.db.fetch(query)]
    # Read back from after the last message recorded: the pairing code is not read again.
    assert len(bodies) == 2 and bodies[1] == "/health said while the daemon was stopped"
