"""What the Discord channel takes from a MESSAGE_CREATE payload."""

from __future__ import annotations

from typing import Any

from butler.channels.discord import cursor_of
from butler.channels.discord_events import inbound_of

ME = "900"


def payload(**fields: Any) -> dict[str, Any]:
    author = {"id": "100", "username": "alice", "global_name": "Alice"}
    return {"id": "5", "channel_id": "77", "type": 0, "author": author, "content": "", **fields}


def test_a_direct_message_addresses_the_bot_and_is_answered_in_place():
    message = inbound_of(payload(content="what is due?"), ME)
    assert message is not None
    assert (message.chat, message.thread, message.sender) == ("77", "", "100")
    assert (message.group, message.addressed, message.display_name) == (False, True, "Alice")
    assert message.reply == {"message_id": "5", "channel_id": "77"}
    assert message.external_id == "77:5"


def test_in_a_guild_a_mention_addresses_the_bot_and_is_taken_off_the_text():
    message = inbound_of(
        payload(guild_id="1", content=f"<@!{ME}> /health hi", mentions=[{"id": ME}]), ME
    )
    assert message is not None and message.group and message.addressed
    assert message.text == "/health hi"


def test_in_a_guild_a_reply_to_the_bot_addresses_it_and_other_talk_does_not():
    reply = payload(guild_id="1", type=19, referenced_message={"author": {"id": ME}})
    other = payload(guild_id="1", content="lunch?")
    assert inbound_of(reply, ME).addressed  # type: ignore[union-attr]
    assert not inbound_of(other, ME).addressed  # type: ignore[union-attr]


def test_the_nickname_in_the_guild_is_the_name_and_never_the_identity():
    message = inbound_of(payload(guild_id="1", member={"nick": "Al"}), ME)
    assert message is not None and message.display_name == "Al" and message.sender == "100"


def test_bots_webhooks_system_lines_and_the_bots_own_messages_are_not_read():
    assert inbound_of(payload(author={"id": "3", "bot": True}), ME) is None
    assert inbound_of(payload(webhook_id="8"), ME) is None
    assert inbound_of(payload(type=7), ME) is None  # a member joined
    assert inbound_of(payload(author={"id": ME}), ME) is None


def test_an_attachment_without_a_type_is_typed_by_its_name_and_a_voice_note_is_voice():
    files = [
        {"id": "1", "filename": "scan.pdf", "size": 9, "url": "https://cdn.discordapp.com/a"},
        {
            "id": "2",
            "filename": "voice-message.ogg",
            "content_type": "audio/ogg",
            "duration_secs": 3.2,
            "size": 4,
            "url": "https://cdn.discordapp.com/b",
        },
    ]
    message = inbound_of(payload(attachments=files), ME)
    assert message is not None
    pdf, voice = message.attachments
    assert (pdf.kind, pdf.media_type, pdf.size) == ("file", "application/pdf", 9)
    assert (voice.kind, voice.media_type) == ("voice", "audio/ogg")


def test_a_stored_cursor_that_is_not_one_reads_nothing_back():
    assert not cursor_of(None) and not cursor_of("not json") and not cursor_of("[1]")
    assert list(cursor_of('{"77": "5", "x": "6", "78": "../"}')) == [("77", "5")]
