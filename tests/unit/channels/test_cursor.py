"""The read-back cursor of the push channels: a chat's last message, the most recent chats."""

from __future__ import annotations

import re

from butler.channels.cursor import CHATS, Seen

DIGITS = re.compile(r"[0-9]+")


def seen(position: str | None = None) -> Seen:
    return Seen(position, DIGITS, DIGITS, int)


def test_a_chat_keeps_its_latest_message_whatever_order_they_were_recorded_in():
    cursor = seen()
    cursor.saw("1", "20")
    cursor.saw("1", "9")  # an older message read back late
    assert list(cursor) == [("1", "20")]
    assert list(seen(cursor.position())) == [("1", "20")]


def test_only_the_chats_talked_in_lately_are_kept():
    cursor = seen()
    for chat in range(CHATS + 5):
        cursor.saw(str(chat), "1")
    cursor.saw("7", "2")  # talked in again: the most recent now
    chats = [chat for chat, _ in cursor]
    assert len(chats) == CHATS and chats[-1] == "7" and "0" not in chats


def test_a_stored_position_that_is_not_a_cursor_reads_nothing_back():
    assert not seen("not json") and not seen("[1, 2]") and not seen(None)
    assert list(seen('{"1": "2", "x": "3", "4": "../"}')) == [("1", "2")]
