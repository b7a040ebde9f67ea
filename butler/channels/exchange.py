"""A message on its way to a butler, and the session request it becomes.

The inbox routes a message, fetches its files and joins its conversation
(:class:`Exchange`); :func:`request_of` makes of that the ``route`` session's
:class:`TriggerRequest`: the prompt, the conversation's framing, the files,
and the metadata the session's page shows.
"""

from __future__ import annotations

from dataclasses import dataclass

from butler.channels.message import Inbound
from butler.channels.prompt import framing, prompt_of
from butler.channels.switchboard import Route, Target
from butler.channels.threads import Thread
from butler.channels.transcribe import Transcript, with_transcripts
from butler.spawner.request import TriggerRequest
from butler.spawner.workspace import SessionFile


@dataclass(frozen=True)
class Exchange:
    """A message on its way to a butler: where it goes, what is sent, in which conversation."""

    message: Inbound
    row_id: int
    route: Route
    target: Target
    thread: Thread
    files: tuple[SessionFile, ...]
    #: The dashboard of the butler keeping the conversation ("" when unknown).
    keeper_url: str = ""
    #: What the voice notes and audio said, when a transcription API is set.
    transcripts: tuple[Transcript, ...] = ()


def request_of(exchange: Exchange) -> TriggerRequest:
    """The session request a routed message becomes: its prompt, the conversation's
    framing, its files, and what the session's page shows of where it came from."""
    message, thread = exchange.message, exchange.thread
    text = exchange.route.text
    prompt = prompt_of(text, message) if text.strip() or not exchange.transcripts else ""
    return TriggerRequest(
        prompt=with_transcripts(prompt, exchange.transcripts),
        context=framing(message, thread.history),
        trigger_source="route",
        session_type="channel",
        resume_session_id=thread.resume,
        files=exchange.files,
        metadata={
            "channel": message.channel,
            "sender": message.sender,
            "thread": message.thread or message.chat,
            "chat": message.chat,
            "conversation_id": str(thread.conversation_id),
            "routed_by": exchange.route.how,
            "attachments": [{"name": f.name, "note": f.note} for f in exchange.files],
            **conversation_link(exchange.keeper_url, thread.conversation_id),
            **(
                {"transcripts": [t.as_json() for t in exchange.transcripts]}
                if exchange.transcripts
                else {}
            ),
        },
    )


def conversation_link(keeper_url: str, conversation_id: object) -> dict[str, str]:
    """Where a routed session's page links to its conversation: the conversations page of
    the butler keeping it (another butler's dashboard, for a switchboard's session)."""
    if not keeper_url:
        return {}
    return {"conversation_url": f"{keeper_url}/conversations/{conversation_id}"}
