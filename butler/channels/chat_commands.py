"""The commands of the chat apps' channels, answered by the daemon without a session.

``/help``, ``/butlers``, ``/stop``, ``/status``, ``/pair CODE`` and ``/start``
from a paired sender, on Telegram, Matrix, email, Slack and Discord alike (the
wording is :mod:`.commands`', shared with the web chat). ``/new`` stays the
inbox's own, since text may follow it. ``/stop`` ends the session answering the
sender in that chat and thread: the inbox keeps a note of each such session while it runs
(:class:`Answering`), and the service lets these commands past the answer they
would otherwise wait behind. A thread (a forum topic, a Matrix thread) is a
conversation of its own, so ``/stop`` and ``/status`` there never reach the
answer being written in another thread of the same chat.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from butler.channels.commands import (
    CHAT_COMMANDS,
    HIDDEN,
    Command,
    Failure,
    Status,
    butlers_text,
    chat_help,
    pair_text,
    parse,
    status_text,
    stop_text,
)
from butler.channels.live import LiveChannel
from butler.channels.message import Inbound
from butler.channels.pairing import code_in, digest
from butler.channels.text import display_name
from butler.channels.threads import Threads
from butler.spawner.result import SpawnerResult
from butler.store.channel_senders import SenderStore
from butler.store.conversations import ConversationStore

#: The error a session stopped with ``/stop`` ends with.
STOPPED = "cancelled: stopped with /stop in the chat"
#: Every command a chat app's channel reads.
OFFERED = {**CHAT_COMMANDS, **HIDDEN}


def command_in(message: Inbound) -> Command | None:
    """The command ``message`` is (not ``/new``, which the inbox reads itself); None when it
    is a message for a butler."""
    if message.attachments:
        return None
    command = parse(message.text, OFFERED)
    return command if command is not None and command.name != "new" else None


@dataclass
class Running:
    """A session answering a sender in a chat, and whether ``/stop`` ended it."""

    butler: str
    session_id: str
    task: asyncio.Task[SpawnerResult]
    stopped: bool = False
    #: The message it answers and its conversation: where a file it sends goes.
    message: Inbound | None = None
    conversation_id: uuid.UUID | None = None
    #: Files it sent the sender so far (:mod:`.files_out` bounds them).
    files_sent: int = 0


class Answering:
    """The sessions answering each sender in each chat and thread now, for ``/stop`` and
    ``/status``."""

    def __init__(self) -> None:
        self._running: dict[tuple[str, str, str, str], Running] = {}
        self._sessions: dict[str, Running] = {}

    @staticmethod
    def key(message: Inbound) -> tuple[str, str, str, str]:
        return (message.channel, message.chat, message.thread, message.sender)

    def started(self, message: Inbound, running: Running) -> None:
        self._running[self.key(message)] = running
        self._sessions[running.session_id] = running

    def ended(self, message: Inbound, running: Running) -> None:
        if self._running.get(self.key(message)) is running:
            del self._running[self.key(message)]
        if self._sessions.get(running.session_id) is running:
            del self._sessions[running.session_id]

    def of_session(self, session_id: str) -> Running | None:
        """What the session ``session_id`` is answering now; None when it answers nothing."""
        return self._sessions.get(session_id)

    def get(self, message: Inbound) -> Running | None:
        return self._running.get(self.key(message))

    def stop(self, message: Inbound) -> bool:
        """Cancel the session answering the sender in this chat and thread; whether one
        was."""
        running = self._running.get(self.key(message))
        if running is None or running.stopped or running.task.done():
            return False  # nothing runs, or it is being stopped already
        running.stopped = True
        running.task.cancel(STOPPED)
        return True


class ChatCommands:
    """Answers the commands of one service's channels."""

    def __init__(
        self,
        senders: SenderStore,
        conversations: ConversationStore,
        threads: Threads,
        answering: Answering,
    ) -> None:
        self.senders = senders
        self.conversations = conversations
        self.threads = threads
        self.answering = answering

    async def answer(
        self, link: LiveChannel, message: Inbound, row_id: int, command: Command
    ) -> None:
        """Do what ``command`` asks and say so in the chat; the message's row says
        ``command``."""
        await self.conversations.mark(row_id, "command")
        current = await self.threads.current(message, link.channel.settings.idle_minutes)
        butler = current["butler"] if current else None
        butlers = {name: t.description for name, t in link.router.targets.items()}
        if command.name == "stop":
            reply = stop_text(self.answering.stop(message))
        elif command.name == "status":
            reply = status_text(await self._status(link, message, butler))
        elif command.name == "butlers":
            reply = butlers_text(butlers, butler)
        elif command.name == "pair" or (command.name == "start" and command.rest):
            reply = pair_text(await self._pair(link, message, command))
        else:  # help, and start alone
            reply = chat_help(butlers, butler)
        await link.say(message, reply)

    async def _pair(self, link: LiveChannel, message: Inbound, command: Command) -> bool | None:
        """``/pair CODE`` from a paired sender: the code used up, the pairing renewed."""
        code = code_in(command.rest) if command.rest else None
        if code is None:
            return None if not command.rest else False
        name = display_name(message.display_name)
        return await self.senders.redeem(link.kind, digest(code), message.sender, name)

    async def _status(self, link: LiveChannel, message: Inbound, butler: str | None) -> Status:
        running = self.answering.get(message)
        name = running.butler if running else butler or link.router.home
        target = link.router.targets.get(name) or link.router.targets[link.router.home]
        spawner = target.spawner
        failed = await spawner.sessions.list(limit=1, status="failed")
        last = None
        if failed:
            row = failed[0]
            when = row.get("completed_at") or row.get("created_at")
            last = Failure(str(row["id"]), when, str(row.get("error") or "no error recorded"))
        answering = running.session_id if running and not running.task.done() else None
        return Status(
            butler=target.name,
            answering=answering,
            waiting=await self.conversations.waiting(
                link.kind, message.chat, message.thread, message.sender
            ),
            running=spawner.running,
            queued=spawner.waiting,
            slots=spawner.config.runtime.max_concurrent_sessions,
            last_failure=last,
        )


def asked_since(idle_minutes: int) -> datetime:
    """How far back a message waiting for the person to pick a butler is kept."""
    return datetime.now(UTC) - timedelta(minutes=idle_minutes)
