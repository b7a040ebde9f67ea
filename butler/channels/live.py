"""One running channel as the inbox uses it: answer a chat (split, retried, recorded), show typing.

A reply that cannot be sent because the channel's server is away is tried
again with backoff for a few minutes: a server restarted mid-conversation
still gets the answer, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from butler.channels.backoff import Backoff
from butler.channels.base import Channel, ChannelState, Need, NotSendable, Paced
from butler.channels.files_out import FileOut
from butler.channels.message import Inbound
from butler.channels.switchboard import Router
from butler.channels.text import one_line, split
from butler.store.conversations import ConversationStore, MessageRecord

log = logging.getLogger(__name__)

#: How long a reply keeps being tried while the channel's server is away.
REPLY_RETRY_S = 300.0
#: How long a file keeps being tried: the session waits for the answer meanwhile.
FILE_RETRY_S = 60.0
#: Typing indicators expire after about five seconds on Telegram; renew before.
TYPING_EVERY_S = 4.0


class LiveChannel:
    """A channel, its state, the router that picks its butlers, and where its replies are kept."""

    def __init__(
        self,
        channel: Channel,
        state: ChannelState,
        router: Router,
        conversations: ConversationStore,
        dashboard_url: str = "",
        need: Need | None = None,
    ) -> None:
        self.channel = channel
        #: The dashboard of the butler keeping the channel's conversations (for the link a
        #: routed session's page shows to its conversation).
        self.dashboard_url = dashboard_url.rstrip("/")
        #: Resolves a further credential by name (the transcription API's key).
        self.need = need
        self.state = state
        self.router = router
        self.conversations = conversations
        self.reply_retry_s = REPLY_RETRY_S
        #: Groups the bot left since the daemon started (not on the channel's allow-list).
        self.left: set[str] = set()

    @property
    def kind(self) -> str:
        return self.channel.kind

    async def say(
        self,
        to: Inbound,
        text: str,
        *,
        butler: str | None = None,
        conversation_id: uuid.UUID | None = None,
        session_id: str | None = None,
    ) -> bool:
        """Send ``text`` where ``to`` came from, split to the channel's limit; whether all went."""
        pieces = split(text, self.channel.max_reply_chars, self.channel.measure)
        for piece in pieces:
            sent = await self._send(to, piece)
            await self._record_out(to, sent, piece, butler, conversation_id, session_id)
            if sent is None:
                return False
        return True

    async def send_file(
        self,
        to: Inbound,
        file: FileOut,
        *,
        butler: str,
        conversation_id: uuid.UUID | None,
        session_id: str,
    ) -> str | None:
        """Send ``file`` where ``to`` came from, retried as a reply is and recorded in the
        conversation beside it; None when it went, else why not (one line)."""
        why: list[str] = []
        sent = await self._send(
            to,
            file.describe(),
            lambda: self.channel.send_file(to, file.name, file.media_type, file.data, file.caption),
            why,
            FILE_RETRY_S,
        )
        await self._record_out(
            to,
            sent,
            file.caption or f"[file {file.describe()}]",
            butler,
            conversation_id,
            session_id,
            [{"name": file.name, "media_type": file.media_type, "size": len(file.data)}],
        )
        return None if sent else (why[-1] if why else "not sent")

    async def _record_out(
        self,
        to: Inbound,
        sent: str | None,
        body: str,
        butler: str | None,
        conversation_id: uuid.UUID | None,
        session_id: str | None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> None:
        """Record what went (or failed to go) to ``to``'s chat in its conversation."""
        await self.conversations.record(
            MessageRecord(
                channel=self.kind,
                direction="out",
                external_id=sent or f"unsent:{uuid.uuid4()}",
                chat=to.chat,
                thread=to.thread,
                sender=butler or "butler",
                body=body,
                attachments=attachments or [],
                conversation_id=conversation_id,
                butler=butler,
                session_id=session_id,
                status="sent" if sent else "failed",
            )
        )

    async def _send(
        self,
        to: Inbound,
        text: str,
        attempt: Callable[[], Awaitable[str]] | None = None,
        why: list[str] | None = None,
        retry_s: float | None = None,
    ) -> str | None:
        """Send ``text`` (or make ``attempt``), again with backoff while the server is away
        or asks to wait; its id, or None once ``retry_s`` (:attr:`reply_retry_s`) is spent
        or the channel cannot send it at all (``why`` gets the last error)."""
        backoff = Backoff()
        retry_s = self.reply_retry_s if retry_s is None else min(retry_s, self.reply_retry_s)
        deadline = asyncio.get_running_loop().time() + retry_s
        while True:
            try:
                return await (attempt() if attempt else self.channel.send(to, text))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = self.channel.redact(one_line(str(exc) or type(exc).__name__))
                if why is not None:
                    why.append(error)
                if isinstance(exc, NotSendable):  # no retry changes that
                    return None
                if asyncio.get_running_loop().time() + backoff.peek() > deadline:
                    log.error(
                        "reply could not be sent; giving up",
                        extra={"channel": self.kind, "error": error},
                    )
                    return None
                log.warning(
                    "reply not sent; trying again", extra={"channel": self.kind, "error": error}
                )
                wait = backoff.next()
                if isinstance(exc, Paced):  # the server said how long: no sooner
                    wait = max(wait, exc.retry_after_s)
                await asyncio.sleep(wait)

    @contextlib.asynccontextmanager
    async def typing(self, to: Inbound) -> AsyncIterator[None]:
        """Show that an answer is being written for as long as the body runs."""
        if not self.channel.shows_typing:
            yield
            return
        task = asyncio.create_task(self._keep_typing(to))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep_typing(self, to: Inbound) -> None:
        while True:
            try:
                await self.channel.typing(to)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a missed indicator is no failure
                log.debug("typing indicator not shown", extra={"error": type(exc).__name__})
            await asyncio.sleep(TYPING_EVERY_S)
