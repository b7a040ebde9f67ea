"""Who gets in: what becomes of a message before any butler sees it.

Pure decisions that the service and the inbox carry out. A sender is who
the platform proves: a Telegram or Matrix user id, an email's From address
only with a DKIM signature of its domain (:mod:`.mail_auth`); never a
display name. A message whose sender is not proven is refused whatever
address it names, and only a paired address hears of it (an unknown one
would be backscatter to whoever a forger named). In a group or room the
butler hears only what is addressed to it (a mention, a reply to it, a
command), in groups on the channel's allow-list, from paired members:
everyone else is a bystander, told nothing, starting nothing, and the
chatter of a group is not even recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from butler.channels.message import Inbound
from butler.channels.pairing import code_in
from butler.config.channels import ChannelSettings

NOT_PAIRED = "This bot answers only people paired with it; ask its owner for a pairing code."


class Overheard(Enum):
    """Why a message is none of the butler's business."""

    #: Said in a group or room that is not on the channel's ``groups`` allow-list.
    GROUP_NOT_ALLOWED = "a group not on the channel's allow-list"
    #: Said in an allowed group without addressing the bot.
    NOT_ADDRESSED = "not addressed to the bot"


def overheard(
    message: Inbound, settings: ChannelSettings, continues: bool = False
) -> Overheard | None:
    """Why the butler should not even record ``message``; None when it is for the butler.

    A private chat is always for the butler (who may then refuse its sender).
    ``continues``: the message is its sender's follow-up in the thread of their open
    conversation, on a channel where that thread is the conversation (Slack).
    """
    if not message.group:
        return None
    if not settings.allows_group(message.chat):
        return Overheard.GROUP_NOT_ALLOWED
    if not message.addressed and not continues:
        return Overheard.NOT_ADDRESSED
    return None


class Action(Enum):
    """What the inbox does with a message that reached it."""

    #: A paired sender, proven: route it to a butler.
    ANSWER = "answer"
    #: An unknown sender, proven, sending a code in a private chat: try to pair them.
    PAIR = "pair"
    #: The sender is not proven: refused, whoever it names.
    UNPROVEN = "unproven"
    #: An unknown sender: refused.
    STRANGER = "stranger"


@dataclass(frozen=True)
class Entry:
    """The inbox's decision on one message."""

    action: Action
    #: What the sender is told (None: nothing).
    notice: str | None = None
    #: The pairing code the message carries (for :attr:`Action.PAIR`; the notice is what
    #: the sender is told when it pairs nobody).
    code: str | None = None


def unproven_notice(reason: str) -> str:
    """What a paired address is told, at most daily, when mail naming it was refused."""
    return (
        f"A message sent in your name was refused: {reason}. If you sent it, your mail "
        "provider must sign your mail with DKIM (most do); otherwise someone else used "
        "your address, and nothing was done with their message."
    )


def admit(message: Inbound, paired: bool, refuses_strangers: bool) -> Entry:
    """What to do with ``message`` from a sender who is (or is not) ``paired``.

    ``refuses_strangers`` is the channel's: whether an unknown sender in a private chat
    gets the one short refusal (email never: it would be backscatter).
    """
    if message.unproven is not None:
        return Entry(Action.UNPROVEN, unproven_notice(message.unproven) if paired else None)
    if paired:
        return Entry(Action.ANSWER)
    # What a stranger is told, should a code not pair them: nothing in a group, nor by email.
    notice = None if message.group or not refuses_strangers else NOT_PAIRED
    code = None if message.group else code_in(message.text)
    if code is not None:
        return Entry(Action.PAIR, notice, code)
    return Entry(Action.STRANGER, notice)
