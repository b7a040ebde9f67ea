"""The web chat: the owner's own conversations with one butler, from its dashboard.

A channel without a server of its own: the dashboard hands each message here
(:mod:`butler.dashboard.chat`), logged in with the owner's login, so the
person is the owner and nothing is paired. Each message is recorded in
``channel_messages`` like any channel's (channel ``web``, sender ``owner``),
in a conversation of ``conversations`` the person picks: a new one, or one
from the list to continue. Its session goes through the spawner like every
chat message's (source ``route``, type ``channel``, the channel, sender and
conversation in its metadata, so it sees its own conversation only), resuming
the conversation's last session. While it runs, its :class:`Turn` holds what
the runtime says and does, for the browser to follow; the answer is recorded
when it ends, and one a stopped daemon left unrecorded is taken from the
session's row at the next start. Commands (:mod:`.commands`) are answered
here, without a session.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from butler.channels.commands import (
    Command,
    Failure,
    Status,
    help_text,
    new_text,
    parse,
    status_text,
    stop_text,
)
from butler.channels.outbox import Outbox, OutFile
from butler.channels.prompt import HISTORY_MESSAGES
from butler.channels.threads import Thread, Threads
from butler.channels.turn import Turn
from butler.channels.uploads import check_text
from butler.channels.web_answers import WebAnswers
from butler.channels.web_message import (
    CHANNEL,
    CHAT,
    OWNER,
    WebMessage,
    earlier,
    inbound_of,
    request_for,
)
from butler.config.channels import ChannelSettings
from butler.errors import ButlerError, SessionNotFound
from butler.spawner.result import SHUTDOWN, SpawnerResult
from butler.spawner.spawner import Spawner
from butler.store.conversations import ConversationStore, MessageRecord
from butler.store.sessions import SessionStore

log = logging.getLogger(__name__)

STOPPED = "cancelled: stopped with /stop in the web chat"
#: Finished turns kept for a follower that comes late; after that, the record answers.
KEEP_FINISHED = 100
#: Messages of one conversation in hand at once (answering and waiting), at most.
MAX_WAITING = 20


class NotFound(ButlerError):
    """No conversation of the web chat has that id."""


class Duplicate(ButlerError):
    """A message sent again whose answer is no longer in hand (the conversation has it)."""


class Busy(ButlerError):
    """A conversation with as many messages in hand as it may have."""


@dataclass(frozen=True)
class Posted:
    """What became of a message: a command's answer, or the turn answering it."""

    #: The conversation it went to (None: the next message starts a new one).
    conversation_id: uuid.UUID | None
    reply: str | None = None
    turn: Turn | None = None


class WebChat:
    """The web chat of one butler: its conversations, the turns answering, the commands."""

    def __init__(
        self,
        name: str,
        description: str,
        spawner: Spawner,
        conversations: ConversationStore,
        sessions: SessionStore,
        settings: ChannelSettings | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.spawner = spawner
        self.store = conversations
        self.sessions = sessions
        self.settings = settings or ChannelSettings()
        self.threads = Threads(conversations)
        self.answers = WebAnswers(name, conversations, sessions)
        self.outbox = Outbox(self.settings.max_attachment_bytes)
        #: Turns being answered, by conversation, in the order they came.
        self._running: dict[uuid.UUID, list[Turn]] = {}
        #: Every turn in hand, by id (the message's), the finished ones for a while.
        self._turns: OrderedDict[str, Turn] = OrderedDict()

    # -- what the dashboard asks ------------------------------------------

    async def post(self, message: WebMessage) -> Posted:
        """Answer ``message``: a command at once, anything else by a session (its turn)."""
        await self.answers.recover()
        command = parse(message.text)
        if command is not None and command.name == "new":
            if not command.rest and not message.files:
                return Posted(None, new_text())
            message = replace(message, text=command.rest, conversation_id=None)
        elif command is not None and not message.files:
            return Posted(message.conversation_id, await self._command(command, message))
        check_text(message.text, bool(message.files), self.settings)
        return await self._accept(message)

    def turn(self, turn_id: str) -> Turn | None:
        """A turn in hand, running or lately finished."""
        return self._turns.get(turn_id)

    async def conversations(self, limit: int) -> list[dict[str, Any]]:
        """The web chat's conversations, the latest first."""
        await self.answers.recover()
        return await self.store.listing(limit, channel=CHANNEL)

    async def thread(self, conversation_id: uuid.UUID, limit: int) -> dict[str, Any]:
        """A conversation, its last ``limit`` messages, and the turns answering in it."""
        await self.answers.recover()
        conversation = await self._conversation(conversation_id)
        messages = await self.store.exchanges(conversation_id, limit)
        running = [turn.id for turn in self._running.get(conversation_id, [])]
        return {"conversation": conversation, "messages": messages, "running": running}

    def send_file(self, session_id: str, name: str, media_type: str, data: bytes) -> str | None:
        """Give the person a file the session ``session_id`` made, while it answers.

        The hook of a tool that sends files back (``butler.web_chat.send_file`` on the
        butler's context, for a session whose metadata says channel ``web``): the file is
        kept for the person to fetch (bounded, in memory) and shown in the answer being
        written; its id, or None when no turn of this chat runs that session or the file
        is too large.
        """
        turn = next((t for t in self._turns.values() if t.session_id == session_id), None)
        if turn is None or turn.finished:
            return None
        file_id = self.outbox.put(OutFile(name, media_type, data))
        if file_id is not None:
            turn.offer_file(file_id, name, media_type, len(data))
        return file_id

    # -- commands ---------------------------------------------------------

    async def _command(self, command: Command, message: WebMessage) -> str:
        if command.name == "help":
            return help_text(self.name, self.description)
        if command.name == "stop":
            return stop_text(self._stop(message.conversation_id))
        return status_text(await self.status(message.conversation_id))

    def _stop(self, conversation_id: uuid.UUID | None) -> bool:
        """Stop every turn of the conversation: the session answering, and what waits."""
        turns = self._running.get(conversation_id, []) if conversation_id else []
        for turn in turns:
            turn.stopped = STOPPED
            if turn.session is not None:
                turn.session.cancel(STOPPED)
            elif turn.task is not None and turn.waiting:
                turn.task.cancel()
        return bool(turns)

    async def status(self, conversation_id: uuid.UUID | None) -> Status:
        """What ``/status`` says for ``conversation_id``."""
        turns = self._running.get(conversation_id, []) if conversation_id else []
        failed = await self.sessions.list(limit=1, status="failed")
        last = None
        if failed:
            row = failed[0]
            when = row.get("completed_at") or row.get("created_at")
            last = Failure(str(row["id"]), when, str(row.get("error") or "no error recorded"))
        return Status(
            butler=self.name,
            answering=turns[0].session_id if turns else None,
            waiting=max(len(turns) - 1, 0),
            running=self.spawner.running,
            queued=self.spawner.waiting,
            slots=self.spawner.config.runtime.max_concurrent_sessions,
            last_failure=last,
        )

    # -- a message answered by a session ------------------------------------

    async def _conversation(self, conversation_id: uuid.UUID) -> dict[str, Any]:
        row = await self.store.get(conversation_id)
        if row is None or row["channel"] != CHANNEL:
            raise NotFound(f"no conversation {conversation_id} in this butler's web chat")
        return row

    async def _accept(self, message: WebMessage) -> Posted:
        if message.conversation_id is None:
            thread = uuid.uuid4().hex
            conversation_id = await self.store.start(CHANNEL, CHAT, thread, OWNER, self.name)
        else:
            conversation = await self._conversation(message.conversation_id)
            conversation_id, thread = conversation["id"], conversation["thread"]
            if len(self._running.get(conversation_id, [])) >= MAX_WAITING:
                raise Busy(
                    f"{MAX_WAITING} messages of this conversation are waiting for their "
                    "answers already; wait for them, or /stop"
                )
        row_id = await self.store.record(
            MessageRecord(
                channel=CHANNEL,
                direction="in",
                external_id=message.id,
                chat=CHAT,
                thread=thread,
                sender=OWNER,
                body=message.text,
                attachments=[{"name": f.name, "note": f.note} for f in message.files],
                conversation_id=conversation_id,
                butler=self.name,
            )
        )
        if row_id is None:  # sent twice (a retry after a lost answer): answered once
            turn = self._turns.get(message.id)
            if turn is None:
                raise Duplicate(f"message {message.id[:40]} was sent already; see its conversation")
            return Posted(turn.conversation_id, turn=turn)
        turn = Turn(message.id, conversation_id, thread)
        waiting = self._running.setdefault(conversation_id, [])
        ahead = waiting[-1] if waiting else None
        waiting.append(turn)
        self._keep(turn)
        turn.task = asyncio.create_task(self._answer(turn, message, row_id, ahead))
        return Posted(conversation_id, turn=turn)

    def _keep(self, turn: Turn) -> None:
        self._turns[turn.id] = turn
        while len(self._turns) > KEEP_FINISHED:
            oldest = next(iter(self._turns.values()))
            if not oldest.finished:
                break
            self._turns.popitem(last=False)

    async def _answer(
        self, turn: Turn, message: WebMessage, row_id: int, ahead: Turn | None
    ) -> None:
        """Wait for the answer ahead of it in the conversation, run the session, record it."""
        try:
            if ahead is not None and ahead.task is not None:
                turn.waiting = True
                await asyncio.wait([ahead.task])
                turn.waiting = False
            if turn.stopped:  # stopped as the answer before it ended
                result = SpawnerResult(success=False, error=turn.stopped)
            else:
                result = await self._run(turn, message, row_id)
        except asyncio.CancelledError:
            if turn.stopped is None:
                raise  # the daemon stopping: the next start takes it from the record
            result = SpawnerResult(success=False, error=turn.stopped, session_id=turn.session_id)
        except Exception as exc:
            log.exception("web chat message could not be answered", extra={"butler": self.name})
            result = SpawnerResult(success=False, error=f"internal error: {type(exc).__name__}")
        finally:
            running = self._running.get(turn.conversation_id, [])
            if turn in running:
                running.remove(turn)
            if not running:
                self._running.pop(turn.conversation_id, None)
        at = (turn.conversation_id, turn.thread)
        answer = await self.answers.record(row_id, at, message.id, result)
        turn.finish(result.success, answer, result.session_id)

    async def _run(self, turn: Turn, message: WebMessage, row_id: int) -> SpawnerResult:
        """The session, resuming the conversation's last one when it can."""
        current = await self._conversation(turn.conversation_id)  # as the last answer left it
        inbound = inbound_of(message, current["thread"])
        can_resume = self.spawner.adapter.supports_resume
        thread = await self.threads.join(inbound, self.name, current, can_resume, HISTORY_MESSAGES)
        thread = earlier(thread, row_id)
        await self.store.mark(row_id, "handling", butler=self.name)
        try:
            try:
                session_id, task = await self.spawner.start(
                    request_for(inbound, thread, message.files), turn
                )
            except SessionNotFound:  # the last session left nothing to resume: afresh
                history = await self.store.exchanges(thread.conversation_id, HISTORY_MESSAGES)
                thread = earlier(Thread(thread.conversation_id, history=history), row_id)
                session_id, task = await self.spawner.start(
                    request_for(inbound, thread, message.files), turn
                )
        except ButlerError as exc:  # refused (queue full, shutting down): one line
            return SpawnerResult(success=False, error=str(exc))
        turn.session = task
        turn.started(session_id)
        if turn.stopped:
            task.cancel(turn.stopped)
        await self.store.mark(row_id, "handling", session_id=session_id)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if not task.cancelled() or (this is not None and this.cancelling()):
                raise
            error = turn.stopped or SHUTDOWN
            return SpawnerResult(success=False, error=error, session_id=session_id)
