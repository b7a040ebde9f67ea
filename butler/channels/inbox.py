"""What happens to one recorded message: sender checked, butler picked, session run, reply sent.

In order: a sender over the rate is told to slow down (when paired); a
sender the channel could not prove is refused (:mod:`.gate` decides who gets
in); an unpaired sender is refused (or paired, when the message is a code); ``/new`` ends the
conversation, and the other commands (:mod:`.chat_commands`) are answered
without a session; the router picks the butler (when it cannot, the message
is kept, and answered by the butler the person then names); attachments are fetched within
bounds; the butler's spawner runs the session (source ``route``), resuming
the conversation's last one; the answer, labelled with the butler, goes back
to the chat. Every way it ends is recorded on the message's row.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from butler.channels.attachments import AttachmentRefused, check, fetch_all
from butler.channels.chat_commands import (
    STOPPED,
    Answering,
    ChatCommands,
    Running,
    asked_since,
    command_in,
)
from butler.channels.commands import AT_ONCE
from butler.channels.exchange import Exchange, request_of
from butler.channels.gate import Action, Entry, admit, unproven_notice
from butler.channels.limits import REFUSAL_EVERY_S, SLOW_DOWN_EVERY_S, Notices, RateLimit
from butler.channels.live import LiveChannel
from butler.channels.message import Inbound
from butler.channels.pairing import digest
from butler.channels.prompt import HISTORY_MESSAGES
from butler.channels.replay import unless_replayed
from butler.channels.routing import new_conversation, which_one
from butler.channels.switchboard import Route, Router
from butler.channels.text import display_name, labelled, one_line
from butler.channels.threads import Thread, Threads
from butler.channels.transcribe import transcribed
from butler.errors import Rejected, SessionNotFound
from butler.spawner.result import SpawnerResult
from butler.store.channel_senders import SenderStore
from butler.store.conversations import ConversationStore

log = logging.getLogger(__name__)

#: A paired address hears that mail in its name was refused at most this often.
UNPROVEN_NOTICE_EVERY_S = 24 * 3600.0
#: Files sent alone within this many seconds after a message with files go with it.
BURST_S = 1.0
#: A paired sender's messages over the rate wait their turn, up to this many minutes' worth.
BACKLOG_MINUTES = 10
#: How the daily notice is recognised among the replies the channel already sent.
NOTICE_MARK = unproven_notice("")[:40]


class Inbox:
    """Answers the recorded messages of one service's channels."""

    def __init__(self, senders: SenderStore, conversations: ConversationStore) -> None:
        self.senders = senders
        self.conversations = conversations
        self.threads = Threads(conversations)
        self.rates: dict[str, RateLimit] = {}
        self.refusals = Notices(REFUSAL_EVERY_S)
        self.slow_downs = Notices(SLOW_DOWN_EVERY_S)
        self.answering = Answering()
        self.commands = ChatCommands(senders, conversations, self.threads, self.answering)

    def at_once(self, message: Inbound) -> bool:
        """Whether ``message`` is a command answered at once, not after the answer being
        written to the same sender (``/stop`` would otherwise wait for what it stops)."""
        command = command_in(message)
        return command is not None and command.name in AT_ONCE

    async def handle(self, link: LiveChannel, message: Inbound, row_id: int) -> None:
        """Answer one message; a failure is recorded and said in one line, never raised."""
        try:
            await self._handle(link, message, row_id)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("message could not be handled", extra={"channel": link.kind})
            await self.conversations.mark(row_id, "failed")
            await link.say(message, "Something went wrong answering this; see the butler's log.")

    async def _handle(self, link: LiveChannel, message: Inbound, row_id: int) -> None:
        settings = link.channel.settings
        if await self.conversations.status_of(row_id) == "merged":
            return  # its files went with the message before it (a burst)
        rate = self.rates.setdefault(link.kind, RateLimit(settings.max_messages_per_minute))
        if not await self._paced(link, message, row_id, rate):
            return
        paired = await self.senders.is_paired(link.kind, message.sender)
        message = await unless_replayed(self.conversations, message, row_id)
        entry = admit(message, paired, link.channel.refuses_strangers)
        if entry.action is Action.UNPROVEN:
            await self._unproven(link, message, row_id, entry)
            return
        if entry.action is not Action.ANSWER:
            await self._stranger(link, message, row_id, entry)
            return
        command = command_in(message)
        if command is not None:
            await self.commands.answer(link, message, row_id, command)
            return
        if message.attachments:
            message = await self._burst(message, row_id, settings.max_attachments)
        fresh, text = new_conversation(message.text)
        if fresh:
            await self.threads.forget(message)
            if not text.strip() and not message.attachments:
                await link.say(message, "New conversation: the next message starts afresh.")
                await self.conversations.mark(row_id, "answered")
                return
        if len(text) > settings.max_message_chars:
            limit = settings.max_message_chars
            line = f"That message is longer than the {limit} characters a message may be."
            await self._refuse(link, message, row_id, line)
            return
        async with link.typing(message):  # from routing (a classifier may run) to the answer
            exchange = await self._prepare(link, message, row_id, text, fresh)
            if exchange is not None:
                await self._converse(link, exchange)

    async def _prepare(
        self, link: LiveChannel, message: Inbound, row_id: int, text: str, fresh: bool
    ) -> Exchange | None:
        """Route the message and fetch its attachments; None when it was answered already."""
        settings = link.channel.settings
        try:  # what the declared types and sizes rule out costs no routing session
            check(message.attachments, settings)
        except AttachmentRefused as exc:
            await self._refuse(link, message, row_id, f"Not accepted: {exc}.")
            return None
        current = None if fresh else await self.threads.current(message, settings.idle_minutes)
        route = await link.router.route(message, text, current["butler"] if current else None)
        if route.butler is None:
            await link.say(message, which_one(link.router.names))
            await self.conversations.mark(row_id, "asked")
            return None
        if route.how == "mention" and not route.text.strip() and not message.attachments:
            kept = await self.conversations.asked(
                message.channel,
                message.chat,
                message.thread,
                message.sender,
                asked_since(settings.idle_minutes),
            )
            if kept is not None:  # the person named a butler for the message kept: answer it
                await self.conversations.mark(row_id, "picked", butler=route.butler)
                message, row_id = Inbound.from_row(kept), kept["id"]
                route = Route(route.butler, message.text, "picked")
                current = None
        try:
            files = await fetch_all(link.channel, message.attachments, settings)
        except AttachmentRefused as exc:
            await self._refuse(link, message, row_id, f"Not accepted: {exc}.")
            return None
        target = link.router.targets[route.butler]
        if not target.spawner.accepting:
            return None  # shutting down: left recorded, answered at the next start
        can_resume = target.spawner.adapter.supports_resume
        thread = await self.threads.join(
            message, route.butler, current, can_resume, HISTORY_MESSAGES
        )
        await self.conversations.mark(
            row_id, "handling", conversation_id=thread.conversation_id, butler=route.butler
        )
        transcripts = await transcribed(link.channel.settings, link.need, message, files)
        return Exchange(
            message, row_id, route, target, thread, files, link.dashboard_url, transcripts
        )

    async def _converse(self, link: LiveChannel, exchange: Exchange) -> None:
        """Run the butler's session and send its answer (or its failure) back."""
        message, thread, butler = exchange.message, exchange.thread, exchange.route.butler
        assert butler is not None
        result = await self._run(exchange)
        if result.success:
            reply, status = result.output.strip() or "(no answer)", "answered"
        else:
            reply = f"could not answer: {one_line(result.error or 'unknown error', 200)}"
            status = "failed"
        if result.error == STOPPED:
            status = "stopped"  # /stop said so already
        await self.conversations.mark(exchange.row_id, status, session_id=result.session_id)
        if result.session_id:
            await self.conversations.touch(thread.conversation_id, result.session_id)
        if status == "stopped":
            return
        await link.say(
            message,
            labelled(butler, reply),
            butler=butler,
            conversation_id=thread.conversation_id,
            session_id=result.session_id,
        )
        log.info(
            "message answered" if result.success else "message not answered",
            extra={
                "channel": link.kind,
                "butler": butler,
                "routed_by": exchange.route.how,
                "session_id": result.session_id,
            },
        )

    async def _run(self, exchange: Exchange) -> SpawnerResult:
        """The session, resuming the conversation's last one when it can."""
        request = request_of(exchange)
        spawner = exchange.target.spawner
        try:
            session_id, task = await spawner.start(request)
        except SessionNotFound:  # the last session left nothing to resume: start afresh
            history = await self.conversations.exchanges(
                exchange.thread.conversation_id, HISTORY_MESSAGES
            )
            thread = Thread(exchange.thread.conversation_id, history=history)
            request = request_of(replace(exchange, thread=thread))
            try:
                session_id, task = await spawner.start(request)
            except Rejected as exc:
                return SpawnerResult(success=False, error=str(exc))
        except Rejected as exc:
            return SpawnerResult(success=False, error=str(exc))
        assert exchange.route.butler is not None
        running = Running(
            exchange.route.butler,
            session_id,
            task,
            message=exchange.message,
            conversation_id=exchange.thread.conversation_id,
        )
        # Noted before any await: the session may send a file as soon as it runs.
        self.answering.started(exchange.message, running)
        try:
            await self.conversations.mark(exchange.row_id, "handling", session_id=session_id)
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            this = asyncio.current_task()
            if not running.stopped or not task.cancelled() or (this and this.cancelling()):
                raise  # the daemon stopping: the next start takes the message up again
            return SpawnerResult(success=False, error=STOPPED, session_id=session_id)
        finally:
            self.answering.ended(exchange.message, running)

    async def _stranger(
        self, link: LiveChannel, message: Inbound, row_id: int, entry: Entry
    ) -> None:
        """An unpaired sender: paired when the message is a good code, else refused."""
        name = display_name(message.display_name)
        if entry.code and await self.senders.redeem(
            link.kind, digest(entry.code), message.sender, name
        ):
            log.info("sender paired", extra={"channel": link.kind, "sender": message.sender})
            await self.conversations.mark(row_id, "paired")
            greeting = f"Paired{', ' + name if name else ''}. "
            await link.say(message, greeting + hello(link.router))
            return
        log.warning(
            "message from an unpaired sender ignored",
            extra={"channel": link.kind, "sender": message.sender},
        )
        why = "not paired" if not entry.code else "not paired (the code was not good)"
        await self.conversations.mark(row_id, "refused", reason=why)
        if entry.notice and self.refusals.due(f"{link.kind}:{message.sender}"):
            await link.say(message, entry.notice)

    async def _unproven(
        self, link: LiveChannel, message: Inbound, row_id: int, entry: Entry
    ) -> None:
        """A sender the channel could not prove: refused in one line of the log and on the
        row; a paired address is told, at most once a day."""
        reason = message.unproven or "unproven"
        log.warning(
            "message refused: its sender is not proven",
            extra={"channel": link.kind, "sender": message.sender, "reason": reason},
        )
        await self.conversations.mark(row_id, "refused", reason=f"sender not proven: {reason}")
        if entry.notice is None:
            return
        since = datetime.now(UTC) - timedelta(seconds=UNPROVEN_NOTICE_EVERY_S)
        if not await self.conversations.told_since(link.kind, message.chat, NOTICE_MARK, since):
            await link.say(message, entry.notice)

    async def _burst(self, message: Inbound, row_id: int, most: int) -> Inbound:
        """``message`` with the files its sender sent right after it, each alone (several
        images picked at once come as one message each): one message, answered once."""
        await asyncio.sleep(BURST_S)
        later = await self.conversations.following(
            message.channel, message.chat, message.thread, message.sender, row_id, most
        )
        for row in later:
            follower = Inbound.from_row(row)
            if follower.text.strip() or not follower.attachments:
                break  # words of their own: a message of its own
            message = replace(message, attachments=message.attachments + follower.attachments)
            await self.conversations.mark(row["id"], "merged")
        return message

    async def _paced(
        self, link: LiveChannel, message: Inbound, row_id: int, rate: RateLimit
    ) -> bool:
        """Wait until ``message`` is within its sender's rate; False when it was refused.

        A paired sender's burst is answered in turn, paced to the rate, and told so once;
        a flood of more than :data:`BACKLOG_MINUTES` minutes' worth waiting in the chat,
        in any of its threads (or a stranger's), is refused.
        """
        wait = rate.wait(message.sender)
        if wait == 0.0:
            return True
        limit = link.channel.settings.max_messages_per_minute
        paired = await self.senders.is_paired(link.kind, message.sender)
        waiting = await self.conversations.waiting(link.kind, message.chat, None, message.sender)
        if not paired or waiting > BACKLOG_MINUTES * limit:
            await self._slow_down(link, message, row_id)
            return False
        if self.slow_downs.due(f"{link.kind}:{message.sender}"):
            line = f"Many messages at once: each is answered in turn, at most {limit} a minute."
            await link.say(message, line)
        while wait:
            await asyncio.sleep(wait)
            wait = rate.wait(message.sender)
        return True

    async def _slow_down(self, link: LiveChannel, message: Inbound, row_id: int) -> None:
        limit = link.channel.settings.max_messages_per_minute
        await self.conversations.mark(row_id, "refused", reason=f"over {limit} messages a minute")
        paired = await self.senders.is_paired(link.kind, message.sender)
        if paired and self.slow_downs.due(f"{link.kind}:{message.sender}"):
            await link.say(message, f"Too many messages: at most {limit} a minute. Wait a moment.")

    async def _refuse(self, link: LiveChannel, message: Inbound, row_id: int, line: str) -> None:
        await self.conversations.mark(row_id, "refused", reason=line)
        await link.say(message, line)

    async def interrupted(self, link: LiveChannel, message: Inbound, row_id: int) -> None:
        """A message whose session a stopped daemon left unfinished: say so, once."""
        await self.conversations.mark(row_id, "failed")
        await link.say(message, "The butler stopped while answering this; please send it again.")


def hello(router: Router) -> str:
    """What a newly paired sender is told they can do."""
    if router.bound or len(router.names) == 1:
        return f"Send a message to talk to {router.names[0]}."
    names = ", ".join(f"/{name}" for name in router.names)
    return f"Send a message, or start it with one of {names} to pick a butler."
