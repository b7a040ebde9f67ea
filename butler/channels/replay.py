"""A proven message sent again: the same signed mail, handed over later by someone else.

A DKIM signature proves who wrote a mail, never who sends it now, so the
same bytes verify again when anyone re-sends them. The channel names the
signature that proved a message (``reply["signature"]``, a digest of its
``b=``); one that came with an earlier message of the same sender makes
this one unproven, and the gate refuses it (docs/security.md).
"""

from __future__ import annotations

from dataclasses import replace

from butler.channels.message import Inbound
from butler.store.conversations import ConversationStore

#: Why a message whose proof came before is refused.
SENT_AGAIN = "its DKIM signature came with an earlier message: the same mail sent again"


async def unless_replayed(
    conversations: ConversationStore, message: Inbound, row_id: int
) -> Inbound:
    """``message``, unproven when the signature proving it came with an earlier message
    of its sender (recorded before row ``row_id``)."""
    signature = message.reply.get("signature")
    if message.unproven is not None or not isinstance(signature, str) or not signature:
        return message
    if await conversations.signed_before(message.channel, message.sender, signature, row_id):
        return replace(message, unproven=SENT_AGAIN)
    return message
