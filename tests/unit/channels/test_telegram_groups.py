"""Whether a Telegram group message is meant for the bot, read from the update as Telegram
sends it (entities in UTF-16 units, the message replied to, who sent it)."""

from __future__ import annotations

from typing import Any

from telegram import Update, User

from butler.channels.telegram import inbound_of

BOT = User(999000, "Butler", is_bot=True, username="butler_test_bot")
GROUP = {"id": -1001, "type": "supergroup", "title": "Family"}
ALICE = {"id": 1001, "is_bot": False, "first_name": "Alice"}


def update(text: str, entities: list[dict[str, Any]] = (), **message: Any) -> Update:
    body = {
        "message_id": 5,
        "date": 1_760_000_000,
        "chat": GROUP,
        "from": ALICE,
        "text": text,
        "entities": list(entities),
        **message,
    }
    return Update.de_json({"update_id": 1, "message": body}, None)


def mention(offset: int, length: int) -> dict[str, Any]:
    return {"type": "mention", "offset": offset, "length": length}


def test_a_mention_after_an_emoji_is_found_by_utf16_offset_and_taken_off_the_words():
    text = "👋 @butler_test_bot what is due today?"
    found = inbound_of(update(text, [mention(3, 16)]), BOT)
    assert found is not None and found.group and found.addressed
    assert found.text == "👋 what is due today?"


def test_talk_among_people_is_not_addressed():
    found = inbound_of(update("and tomorrow?"), BOT)
    assert found is not None and found.group and not found.addressed


def test_a_mention_of_another_bot_or_a_command_for_it_is_not_for_this_one():
    other = inbound_of(update("@other_bot hi", [mention(0, 10)]), BOT)
    command = {"type": "bot_command", "offset": 0, "length": 16}
    theirs = inbound_of(update("/start@other_bot", [command]), BOT)
    assert not other.addressed and not theirs.addressed


def test_a_command_a_reply_to_the_bot_or_a_mention_of_its_account_is_for_it():
    command = {"type": "bot_command", "offset": 0, "length": 7}
    bot_said = {"message_id": 4, "date": 1, "chat": GROUP, "from": BOT.to_dict(), "text": "hi"}
    by_id = {"type": "text_mention", "offset": 0, "length": 6, "user": BOT.to_dict()}
    assert inbound_of(update("/health what is due", [command]), BOT).addressed
    assert inbound_of(update("thanks", reply_to_message=bot_said), BOT).addressed
    assert inbound_of(update("Butler, hi", [by_id]), BOT).addressed


def test_an_anonymous_admin_or_a_channel_posting_in_the_group_is_nobody():
    anonymous = {"id": 1087968824, "is_bot": True, "first_name": "Group"}
    assert (
        inbound_of(update("@butler_test_bot hi", [mention(0, 16)], **{"from": anonymous}), BOT)
        is None
    )


def test_a_private_chat_is_always_addressed_and_keeps_its_words():
    private = {"id": 1001, "type": "private", "first_name": "Alice"}
    found = inbound_of(update("@butler_test_bot hi", [mention(0, 16)], chat=private), BOT)
    assert not found.group and found.addressed and found.text == "@butler_test_bot hi"
