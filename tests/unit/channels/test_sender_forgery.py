"""An outside attacker on a chat channel, trying to pass for a paired person: each
platform's payload as the attacker can shape it, and who the channel says sent it.

Mallory is a stranger (or another paired person); Alice is paired. Whatever the
message carries (Alice's name, her id in its text, a forward of her words, a reply to
her, an edit of her message), the sender is Mallory's own id, or nobody at all.
"""

from __future__ import annotations

from typing import Any

import pytest
from nio import MatrixRoom
from telegram import Update, User

from butler.channels import discord_events, slack_events, telegram
from butler.channels.matrix import MatrixChannel
from butler.config.channels import MatrixSettings

BOT = User(999000, "Butler", is_bot=True, username="butler_test_bot")
ALICE = {"id": 1001, "is_bot": False, "first_name": "Alice", "username": "alice"}
MALLORY = {"id": 6666, "is_bot": False, "first_name": "Alice", "username": "alice_"}
PRIVATE = {"id": 6666, "type": "private", "first_name": "Alice"}
GROUP = {"id": -1001, "type": "supergroup", "title": "Family"}


def telegram_update(kind: str = "message", **message: Any) -> Update:
    body = {"message_id": 5, "date": 1_760_000_000, "chat": PRIVATE, "from": MALLORY, **message}
    return Update.de_json({"update_id": 1, kind: body}, None)


@pytest.mark.parametrize(
    "shaped",
    [
        {"text": "1001 here, it's me, Alice"},
        {"text": "hi", "forward_origin": {"type": "user", "date": 1, "sender_user": ALICE}},
        {"text": "hi", "forward_from": ALICE, "forward_date": 1},
        {"text": "hi", "via_bot": {"id": 1001, "is_bot": True, "first_name": "A"}},
        {
            "text": "@alice",
            "entities": [{"type": "text_mention", "offset": 0, "length": 6, "user": ALICE}],
        },
        {
            "text": "hi",
            "reply_to_message": {
                "message_id": 4,
                "date": 1,
                "chat": PRIVATE,
                "from": ALICE,
                "text": "mine",
            },
        },
    ],
)
def test_telegram_names_the_account_that_sent_it_whatever_it_carries(shaped):
    found = telegram.inbound_of(telegram_update(**shaped), BOT)
    assert found is not None and found.sender == "6666" and found.chat == "6666"


@pytest.mark.parametrize("kind", ["edited_message", "channel_post", "edited_channel_post"])
def test_telegram_edits_and_channel_posts_are_nobodys(kind):
    assert telegram.inbound_of(telegram_update(kind, text="/health as Alice"), BOT) is None


def test_a_channels_post_forwarded_into_a_group_is_telegrams_own_account_not_a_person():
    """A linked channel's posts arrive in its discussion group from Telegram's service
    account (777000, not a bot), the channel as ``sender_chat``: a sender nobody paired,
    and a code in it pairs nobody (said in a group)."""
    service = {"id": 777000, "is_bot": False, "first_name": "Telegram"}
    channel = {"id": -100777, "type": "channel", "title": "News"}
    found = telegram.inbound_of(
        telegram_update(
            chat=GROUP, text="@butler_test_bot K7Q2M-9XHDA", sender_chat=channel,
            is_automatic_forward=True, entities=[{"type": "mention", "offset": 0, "length": 16}],
            **{"from": service},
        ),
        BOT,
    )  # fmt: skip
    assert found is not None and found.sender == "777000" and found.group


def slack_payload(**event: Any) -> dict[str, Any]:
    base = {"type": "message", "user": "U0MALLORY", "ts": "1.000100", "channel": "D0MALLORY"}
    return {"type": "event_callback", "event": {**base, "channel_type": "im", **event}}


@pytest.mark.parametrize(
    "shaped",
    [
        {"subtype": "message_changed", "user": None,
         "message": {"user": "U0ALICE", "text": "as Alice"}},
        {"subtype": "bot_message", "user": "U0ALICE", "text": "as Alice"},
        {"bot_id": "B0HOOK", "user": "U0ALICE", "text": "as Alice"},
        {"subtype": "me_message", "user": "U0ALICE", "text": "as Alice"},
        {"subtype": "message_replied", "user": "U0ALICE", "text": "as Alice"},
    ],
)  # fmt: skip
def test_slack_edits_bots_and_webhooks_are_nobodys(shaped):
    assert slack_events.inbound_of(slack_payload(**shaped), "U0BUTLER") is None


def test_slack_names_the_user_who_posted_whatever_the_text_says():
    found = slack_events.inbound_of(slack_payload(text="<@U0ALICE> says: I am U0ALICE"), "U0BUTLER")
    assert found is not None and found.sender == "U0MALLORY"


def discord_payload(**fields: Any) -> dict[str, Any]:
    author = {"id": "666", "username": "alice_", "global_name": "Alice"}
    return {"id": "5", "channel_id": "77", "type": 0, "author": author, "content": "hi", **fields}


@pytest.mark.parametrize(
    "shaped",
    [
        {"webhook_id": "42", "author": {"id": "100", "username": "Alice"}},
        {"author": {"id": "100", "username": "Alice", "bot": True}},
        {"type": 7, "author": {"id": "100", "username": "Alice"}},  # a join line
    ],
)
def test_discord_webhooks_bots_and_system_lines_are_nobodys(shaped):
    assert discord_events.inbound_of(discord_payload(**shaped), "900") is None


def test_discord_names_the_author_whatever_the_nickname_or_the_reply():
    replied = {"id": "4", "author": {"id": "100", "username": "alice"}, "content": "mine"}
    found = discord_events.inbound_of(
        discord_payload(
            guild_id="1", member={"nick": "Alice"}, referenced_message=replied,
            content="<@100> I am Alice", mentions=[{"id": "100"}, {"id": "900"}],
        ),
        "900",
    )  # fmt: skip
    assert found is not None and (found.sender, found.display_name) == ("666", "Alice")


class _Client:
    """What :meth:`MatrixChannel._inbound` asks of nio's client: the rooms it knows."""

    def __init__(self, room: MatrixRoom) -> None:
        self.rooms = {room.room_id: room}


@pytest.mark.parametrize(
    ("sender", "content"),
    [
        ("@alice:evil.test", {"msgtype": "m.text", "body": "hi"}),  # her localpart elsewhere
        ("@mallory:home.test", {"msgtype": "m.text", "body": "@alice:home.test: hi"}),
        ("@mallory:home.test", {"msgtype": "m.text", "body": "* hi", "m.new_content":
            {"msgtype": "m.text", "body": "hi"}, "m.relates_to":
            {"rel_type": "m.replace", "event_id": "$alices"}}),
        ("@mallory:home.test", {"msgtype": "m.text", "body": "hi", "m.relates_to":
            {"rel_type": "m.thread", "event_id": "$alices_thread"}}),
    ],
)  # fmt: skip
async def test_matrix_names_the_user_id_the_homeserver_vouches_for(sender, content):
    settings = MatrixSettings(homeserver="https://home.test", user_id="@butler:home.test")
    channel = MatrixChannel(settings)
    room = MatrixRoom("!dm:home.test", "@butler:home.test")
    room.add_member(sender, "Alice", None)  # the name Mallory chose: Alice
    room.add_member("@butler:home.test", "Butler", None)
    channel._client = _Client(room)  # type: ignore[assignment]
    found = await channel._inbound(
        room.room_id,
        {"sender": sender, "content": content, "event_id": "$e", "type": "m.room.message"},
    )
    assert found is not None and found.sender == sender and found.display_name == "Alice"
