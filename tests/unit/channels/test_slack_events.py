"""What the Slack channel takes from an Events API payload, and how it escapes an answer."""

from __future__ import annotations

from typing import Any

from butler.channels.slack import escaped
from butler.channels.slack_events import inbound_of

ME = "U0BUTLER"


def payload(**event: Any) -> dict[str, Any]:
    base = {"type": "message", "user": "U0ALICE", "ts": "1.000100", "channel": "D0ALICE"}
    return {"type": "event_callback", "event": {**base, "channel_type": "im", **event}}


def test_a_direct_message_is_the_conversation_itself_and_addresses_the_bot():
    message = inbound_of(payload(text="what is due &lt;today&gt;?"), ME)
    assert message is not None
    assert (message.chat, message.thread, message.sender) == ("D0ALICE", "", "U0ALICE")
    assert message.text == "what is due <today>?"
    assert message.external_id == "D0ALICE:1.000100"
    assert (message.group, message.addressed) == (False, True)
    assert message.reply == {"ts": "1.000100", "thread_ts": ""}


def test_a_reply_in_a_direct_message_thread_is_answered_in_that_thread():
    message = inbound_of(payload(text="and?", thread_ts="0.5"), ME)
    assert message is not None and message.thread == "" and message.reply["thread_ts"] == "0.5"


def test_a_channel_message_opens_its_own_thread_and_a_reply_there_keeps_it():
    top = inbound_of(payload(channel="C1", channel_type="channel", text=f"<@{ME}> hi"), ME)
    below = inbound_of(
        payload(channel="C1", channel_type="channel", text="more", thread_ts="1.000100"), ME
    )
    assert top is not None and below is not None
    assert top.thread == below.thread == "1.000100"
    assert top.text == "hi" and top.group and top.addressed
    assert not below.addressed  # no mention, and the thread is Alice's own


def test_an_app_mention_and_the_same_message_are_one_message():
    mention = inbound_of(payload(type="app_mention", channel="C1", text=f"<@{ME}> hi"), ME)
    plain = inbound_of(payload(channel="C1", channel_type="channel", text=f"<@{ME}> hi"), ME)
    assert mention is not None and plain is not None
    assert mention.external_id == plain.external_id and mention.addressed


def test_a_reply_in_a_thread_the_bot_started_addresses_it():
    message = inbound_of(
        payload(channel="C1", channel_type="channel", thread_ts="0.9", parent_user_id=ME), ME
    )
    assert message is not None and message.addressed


def test_edits_bots_and_the_bots_own_posts_are_not_read():
    assert inbound_of(payload(subtype="message_changed"), ME) is None
    assert inbound_of(payload(bot_id="B1", text="hi"), ME) is None
    assert inbound_of(payload(user=ME, text="hi"), ME) is None
    assert inbound_of({"type": "event_callback", "event": {"type": "reaction_added"}}, ME) is None


def test_a_shared_file_is_announced_and_a_deleted_one_is_refused_by_name():
    files = [
        {"id": "F1", "name": "meds.txt", "mimetype": "text/plain", "size": 20},
        {"id": "F2", "mode": "tombstone"},
    ]
    message = inbound_of(payload(subtype="file_share", files=files), ME)
    assert message is not None
    first, second = message.attachments
    assert (first.kind, first.media_type, first.size, first.ref) == ("file", "text/plain", 20, "F1")
    assert second.refusal and "deleted" in second.refusal


def test_an_answer_cannot_notify_a_whole_channel():
    assert escaped("<!channel> a & b > c") == "&lt;!channel&gt; a &amp; b &gt; c"
