"""A chat is a conversation: follow-ups within the idle window continue the same session.

A conversation belongs to one sender in one chat (and thread) with one
butler. A message that follows another (a reply to it, a Matrix thread
started on it) continues the conversation that message was part of, however
long ago, when it is the sender's own: a thread on the butler's answer goes
on with that answer's butler. Otherwise the sender's latest conversation in
the same chat and thread continues while its idle window is open, so each
thread (a forum topic, a Matrix thread) keeps its own window. What a
follow-up resumes comes only from these records, never from anything in the
message, so a sender can only ever resume their own threads.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from butler.channels.message import Inbound
from butler.store.conversations import ConversationStore


@dataclass(frozen=True)
class Thread:
    """The conversation a message is part of, and the session it continues."""

    conversation_id: uuid.UUID
    #: The session to resume (None: a fresh one).
    resume: str | None = None
    #: Earlier messages, for a runtime that cannot resume its own session.
    history: list[dict[str, Any]] = field(default_factory=list)


class Threads:
    """Finds and starts conversations in the store."""

    def __init__(self, store: ConversationStore) -> None:
        self.store = store

    async def current(self, message: Inbound, idle_minutes: int) -> dict[str, Any] | None:
        """The conversation of the message ``message`` follows, if the sender's; else the
        sender's conversation in this chat and thread, while its idle window is open."""
        if message.follows:
            followed = await self.store.followed(
                message.channel, message.chat, message.sender, list(message.follows)
            )
            if followed is not None:
                return {**followed, "followed": True}
        latest = await self.store.latest(
            message.channel, message.chat, message.thread, message.sender
        )
        if latest is None:
            return None
        if latest["last_message_at"] < datetime.now(UTC) - timedelta(minutes=idle_minutes):
            return None
        return latest

    async def join(
        self,
        message: Inbound,
        butler: str,
        current: dict[str, Any] | None,
        can_resume: bool,
        history_limit: int,
    ) -> Thread:
        """Continue ``current`` when it is with ``butler``, else start a new conversation."""
        if current is not None and current["butler"] == butler:
            if current.get("followed") and current["thread"] == message.thread:
                await self.store.reopen(current["id"])  # a reply in its own timeline
            last = current["last_session_id"]
            if can_resume and last is not None:
                return Thread(current["id"], resume=str(last))
            history = await self.store.exchanges(current["id"], history_limit)
            return Thread(current["id"], history=history)
        conversation = await self.store.start(
            message.channel, message.chat, message.thread, message.sender, butler
        )
        return Thread(conversation)

    async def forget(self, message: Inbound) -> int:
        """``/new``: the sender's conversations in this chat end here."""
        return await self.store.close(message.channel, message.chat, message.thread, message.sender)
