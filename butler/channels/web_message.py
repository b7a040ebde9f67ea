"""A web chat message in the terms every channel shares, and the session it asks for.

The web chat's conversations are conversations like any channel's: channel
``web``, the person ``owner`` (whoever holds the owner's login), one chat
(the dashboard) with a thread per conversation. Its session is asked for as
a chat message's is (source ``route``, type ``channel``, framed by
:mod:`.prompt`), with the channel, sender and conversation in its metadata:
what a session's scope is read from.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from butler.channels.message import AttachmentRef, Inbound
from butler.channels.prompt import framing, prompt_of
from butler.channels.threads import Thread
from butler.spawner.request import TriggerRequest
from butler.spawner.workspace import SessionFile

CHANNEL = "web"
#: Who writes in the web chat: whoever holds the owner's login.
OWNER = "owner"
CHAT = "dashboard"
#: How the session is told who wrote.
WHO = "the owner"


@dataclass(frozen=True)
class WebMessage:
    """What the person sent: text, files, and the conversation it goes on."""

    #: The browser's own id of the message: one sent twice is answered once.
    id: str
    text: str
    #: The conversation it continues; None starts a new one.
    conversation_id: uuid.UUID | None
    files: tuple[SessionFile, ...] = ()


def inbound_of(message: WebMessage, thread: str) -> Inbound:
    """The message as a channel's (its files counted, for the prompt of a message of files)."""
    return Inbound(
        channel=CHANNEL,
        external_id=message.id,
        chat=CHAT,
        thread=thread,
        sender=OWNER,
        display_name=WHO,
        text=message.text,
        attachments=tuple(AttachmentRef("file", "", len(f.data), "upload") for f in message.files),
        addressed=True,
    )


def request_for(inbound: Inbound, thread: Thread, files: tuple[SessionFile, ...]) -> TriggerRequest:
    """The session of a web chat message in the conversation ``thread``."""
    return TriggerRequest(
        prompt=prompt_of(inbound.text, inbound),
        context=framing(inbound, thread.history),
        trigger_source="route",
        session_type="channel",
        resume_session_id=thread.resume,
        files=files,
        metadata={
            "channel": CHANNEL,
            "sender": OWNER,
            "thread": inbound.thread,
            "chat": CHAT,
            "conversation_id": str(thread.conversation_id),
            "routed_by": "bound",
            "attachments": [{"name": f.name, "note": f.note} for f in files],
        },
    )


def earlier(thread: Thread, row_id: int) -> Thread:
    """``thread`` with only what came before the message ``row_id`` in its history (the
    message is recorded in its conversation at once, and others may follow it)."""
    return replace(thread, history=[m for m in thread.history if m["id"] < row_id])
