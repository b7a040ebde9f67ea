"""The channels of one database, running in the daemon: read, record, answer, reconnect.

Each channel reads in a loop of its own. A batch is recorded message by
message (a message delivered twice is recorded once) before the channel's
cursor moves past it, then each new message is answered in its own task, in
order within a chat and sender, concurrently across them. What a group says
without addressing the butler, or says in a group not on the allow-list, is
neither recorded nor answered (:mod:`.gate`). A channel whose
server goes away is connected again with backoff; its state is what
``status()`` shows. At the first connection, messages recorded but never
answered (the daemon stopped) are taken up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from butler.channels.backoff import Backoff
from butler.channels.base import Misconfigured
from butler.channels.chat_commands import Running
from butler.channels.gate import Overheard, overheard
from butler.channels.inbox import Inbox
from butler.channels.live import LiveChannel
from butler.channels.message import Batch, Inbound
from butler.channels.text import one_line
from butler.store.conversations import ConversationStore, MessageRecord

log = logging.getLogger(__name__)

#: Messages being answered at once, at most; more are told to wait.
MAX_IN_HAND = 200
TOO_BUSY = "Too busy right now; please send it again in a few minutes."

#: Resolves a credential's value by name (the home butler's credentials store).
Resolve = Callable[[str], Awaitable[str | None]]


class ChannelService:
    """Runs a set of channels over one inbox until stopped."""

    def __init__(
        self,
        links: Sequence[LiveChannel],
        inbox: Inbox,
        conversations: ConversationStore,
        resolve: Resolve,
        secrets: dict[str, str],
        hint: str,
    ) -> None:
        """``secrets`` names each channel's credential by kind; ``hint`` says how to set one."""
        self.links = list(links)
        self.inbox = inbox
        self.conversations = conversations
        self.resolve = resolve
        self.secrets = secrets
        self.hint = hint
        self._readers: list[asyncio.Task[None]] = []
        self._answering: set[asyncio.Task[None]] = set()
        self._last: dict[tuple[str, str, str], asyncio.Task[None]] = {}
        for link in self.links:
            link.channel.paired = functools.partial(inbox.senders.is_paired, link.kind)

    def answering(self, session_id: str) -> tuple[LiveChannel, Running] | None:
        """The channel and the answer the session ``session_id`` is writing now, if any
        of these channels' messages is what it answers (where its files go)."""
        running = self.inbox.answering.of_session(session_id)
        if running is None or running.message is None:
            return None
        link = next((x for x in self.links if x.kind == running.message.channel), None)
        return (link, running) if link is not None else None

    def states(self) -> list[dict[str, object]]:
        """Each channel's state, for ``status()``."""
        return [link.state.as_json() for link in self.links]

    def start(self) -> None:
        """Start reading every channel."""
        for link in self.links:
            self._readers.append(asyncio.create_task(self._read(link), name=f"channel-{link.kind}"))

    async def stop(self, timeout: float = 30.0) -> None:
        """Stop reading, give answers in hand ``timeout`` seconds, then close every channel."""
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)
        self._readers.clear()
        if self._answering:
            _, late = await asyncio.wait(set(self._answering), timeout=timeout)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        for link in self.links:
            with contextlib.suppress(Exception):
                await link.channel.close()
            link.state.moved("stopped")

    async def _read(self, link: LiveChannel) -> None:
        backoff = Backoff()
        recovered = False
        while True:
            try:
                await self._connect(link)
                if not recovered:
                    await self._recover(link)
                    recovered = True
                while True:
                    batch = await link.channel.receive()
                    backoff.reset()
                    await self._take(link, batch)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await self._lost(link, exc)
                await asyncio.sleep(backoff.next())

    async def _connect(self, link: LiveChannel) -> None:
        name = self.secrets[link.kind]
        secret = await self.resolve(name)
        if not secret:
            raise Misconfigured(
                f"credential {name} is not set; expected it in the credentials store "
                f"({self.hint.format(name=name)})"
            )
        link.channel.secrets.add(secret)
        start = await link.channel.connect(secret, await self.conversations.cursor(link.kind))
        if start is not None:
            await self.conversations.set_cursor(link.kind, start)
        link.state.moved("connected")
        log.info("channel connected", extra={"channel": link.kind})

    async def _lost(self, link: LiveChannel, exc: Exception) -> None:
        error = link.channel.redact(one_line(str(exc) or type(exc).__name__, 200))
        if link.state.status != "retrying" or link.state.error != error:
            level = logging.ERROR if isinstance(exc, Misconfigured) else logging.WARNING
            log.log(
                level, "channel lost; reconnecting", extra={"channel": link.kind, "error": error}
            )
        link.state.moved("retrying", error)
        with contextlib.suppress(Exception):
            await link.channel.close()

    async def _take(self, link: LiveChannel, batch: Batch) -> None:
        """Record each message and answer it if it is new; then move the cursor past them.

        A message recorded before a failure is answered all the same; delivered
        again after the reconnect, it is recognised and not answered twice.
        """
        for message in batch.messages:
            if await self._overheard(link, message):
                continue
            row_id = await self.conversations.record(record_of(message))
            if row_id is not None:
                self._answer(link, message, row_id, self.inbox.handle)
        if batch.messages:
            link.state.last_message_at = time.time()
        if batch.position is not None:
            await self.conversations.set_cursor(link.kind, batch.position)

    async def _overheard(self, link: LiveChannel, message: Inbound) -> bool:
        """Whether ``message`` is a group's talk not meant for the butler (left unrecorded);
        the bot leaves a group not on the allow-list, once."""
        settings = link.channel.settings
        why = overheard(message, settings)
        if why is Overheard.NOT_ADDRESSED and link.channel.follows_threads and message.thread:
            continues = await self.inbox.threads.current(message, settings.idle_minutes)
            why = overheard(message, settings, continues is not None)
        if why is Overheard.GROUP_NOT_ALLOWED and message.chat not in link.left:
            link.left.add(message.chat)
            await self._leave(link, message.chat)
        return why is not None

    async def _leave(self, link: LiveChannel, chat: str) -> None:
        """Leave a group not on the allow-list (where the channel can), said in one line."""
        where = {"channel": link.kind, "chat": chat}
        try:
            left = await link.channel.leave(chat)
        except Exception as exc:  # gone already, or the server refused: said, not fatal
            error = link.channel.redact(one_line(str(exc) or type(exc).__name__, 200))
            log.warning("could not leave the group", extra={**where, "error": error})
            return
        if left:
            log.warning("left a group not on the channel's allow-list", extra=where)
        else:
            log.warning("a group not on the channel's allow-list is not heard", extra=where)

    async def _recover(self, link: LiveChannel) -> None:
        for row in await self.conversations.open_messages(link.kind):
            message = Inbound.from_row(row)
            if row["status"] == "handling":
                self._answer(link, message, row["id"], self.inbox.interrupted)
            else:
                self._answer(link, message, row["id"], self.inbox.handle)

    def _answer(
        self,
        link: LiveChannel,
        message: Inbound,
        row_id: int,
        how: Callable[[LiveChannel, Inbound, int], Awaitable[None]],
    ) -> None:
        """Answer in a task of its own, after the same sender's earlier message in the chat."""
        if len(self._answering) >= MAX_IN_HAND:
            busy = asyncio.create_task(self._too_busy(link, message, row_id))
            self._answering.add(busy)
            busy.add_done_callback(self._answering.discard)
            return
        key = (link.kind, message.chat, message.sender)
        if how == self.inbox.handle and self.inbox.at_once(message):
            key = (link.kind, message.chat, f"{message.sender}\0{message.external_id}")
        before = self._last.get(key)

        async def answer() -> None:
            if before is not None:
                await asyncio.wait([before])
            await how(link, message, row_id)

        task = asyncio.create_task(answer())
        self._last[key] = task
        self._answering.add(task)
        task.add_done_callback(lambda done: self._done(key, done))

    def _done(self, key: tuple[str, str, str], task: asyncio.Task[None]) -> None:
        self._answering.discard(task)
        if self._last.get(key) is task:
            del self._last[key]
        if not task.cancelled() and task.exception() is not None:
            log.error("answering a message failed", exc_info=task.exception())

    async def _too_busy(self, link: LiveChannel, message: Inbound, row_id: int) -> None:
        await self.conversations.mark(row_id, "refused", reason=f"too busy: {MAX_IN_HAND} in hand")
        await link.say(message, TOO_BUSY)


def record_of(message: Inbound) -> MessageRecord:
    """The row a message received is recorded as, before anything is done with it."""
    return MessageRecord(
        channel=message.channel,
        direction="in",
        external_id=message.external_id,
        chat=message.chat,
        thread=message.thread,
        sender=message.sender,
        display_name=message.display_name,
        body=message.text,
        attachments=[
            {"kind": a.kind, "media_type": a.media_type, "size": a.size}
            for a in message.attachments
        ],
        payload=message.payload(),
    )
