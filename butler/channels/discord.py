"""Discord: a bot reached over the Gateway WebSocket, so no public address is needed.

Built on hikari's ``GatewayBot`` (its Gateway session with heartbeats,
resumes and reconnects, and its REST client with Discord's rate-limit
buckets), pointed at ``api_url`` through its public ``rest_url``. The
channel reads the raw ``MESSAGE_CREATE`` payloads (``ShardPayloadEvent``),
so what it takes from a message is what Discord's documentation says, and
keeps no cache of guilds or members (only its own user).

The Gateway has no acknowledgement and no backlog: a session resumed after
a short break replays what was missed, a new one does not. So the cursor
is the last message recorded in each of the chats talked in lately, and
every new Gateway session (the first of a start, or one after Discord
refused a resume) reads back through REST what came after it; a message
read twice is recognised by its id. In a direct message the conversation is
the chat; in a guild channel the bot answers as a reply to the message, and
a Discord thread is a conversation of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import urllib.parse
from dataclasses import replace
from typing import Any

import aiohttp
import hikari

from butler.channels.base import Channel, ChannelError, Misconfigured, NotSendable, TooLarge
from butler.channels.cursor import READ_BACK, Seen
from butler.channels.discord_events import inbound_of, payload_of
from butler.channels.download import bounded, secure
from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.channels.text import utf16_units
from butler.config.channels import DiscordSettings

log = logging.getLogger(__name__)

#: What Discord takes in one message.
MAX_MESSAGE = 2000
#: How long logging in and the first READY may take.
CONNECT_S = 60.0
#: Gateway close codes that need a person: a wrong token, intents the portal did not allow.
REFUSED_CODES = {
    4004: "the bot token was refused",
    4013: "invalid intents",
    4014: (
        "the Message Content intent is not enabled for this bot in the Developer Portal "
        "(or set message_content = false)"
    ),
}
#: Guild channels whose kind (thread or not) the bot remembers, at most.
PARENTS_KEPT = 2000
#: What a Discord id looks like (a snowflake).
SNOWFLAKE = re.compile(r"[0-9]{1,20}")


class DiscordChannel(Channel):
    """A Discord bot, over the Gateway."""

    kind = "discord"
    settings: DiscordSettings
    #: What a bot may upload in one message where the server has no boost.
    max_file_bytes = 10 * 1024 * 1024

    def __init__(self, settings: DiscordSettings) -> None:
        super().__init__(settings)
        self._bot: hikari.GatewayBot | None = None
        self._http: aiohttp.ClientSession | None = None
        self._watch: asyncio.Task[None] | None = None
        self._events: asyncio.Queue[dict[str, Any] | ChannelError] = asyncio.Queue()
        #: The bot's own user id: its mentions and replies to it address it.
        self.me = ""
        #: A guild channel's parent when it is a thread, "" when it is not.
        self._parents: dict[str, str] = {}
        #: The cursor: each recent chat's last message recorded.
        self._seen = cursor_of(None)
        self._reading_back: set[asyncio.Task[None]] = set()
        #: The Gateway's end, said after the messages that came before it.
        self._failed: ChannelError | None = None

    @property
    def max_reply_chars(self) -> int:
        return MAX_MESSAGE

    def measure(self, text: str) -> int:
        # Discord's documentation does not say how it counts; UTF-16 units are the larger count.
        return utf16_units(text)

    @property
    def bot(self) -> hikari.GatewayBot:
        if self._bot is None:
            raise ChannelError("discord: not connected")
        return self._bot

    async def connect(self, secret: str, position: str | None) -> str | None:
        intents = hikari.Intents.GUILDS | hikari.Intents.GUILD_MESSAGES | hikari.Intents.DM_MESSAGES
        if self.settings.message_content:
            intents |= hikari.Intents.MESSAGE_CONTENT
        self._events, self._failed = asyncio.Queue(), None
        self._seen = cursor_of(position)
        try:
            bot = hikari.GatewayBot(
                secret,
                banner=None,
                logs=None,  # the daemon's logging stays the daemon's
                suppress_optimization_warning=True,
                intents=intents,
                cache_settings=hikari.impl.CacheSettings(components=hikari.api.CacheComponents.ME),
                rest_url=self.settings.api_url,
                max_rate_limit=60,
                max_retries=2,
            )
        except ValueError:  # hikari reads the bot's id out of the token first
            raise Misconfigured(
                "discord: the bot token is not one; expected the token of the Developer "
                "Portal's Bot page"
            ) from None
        bot.subscribe(hikari.ShardPayloadEvent, self._on_payload)
        bot.subscribe(hikari.ShardReadyEvent, self._on_ready)
        self._bot = bot
        self._http = aiohttp.ClientSession()
        try:
            await asyncio.wait_for(bot.start(check_for_updates=False), CONNECT_S)
        except TimeoutError:
            raise ChannelError("discord: no READY from the Gateway") from None
        except Exception as exc:
            raise _error(exc) from None
        me = bot.get_me()
        if me is None:
            raise ChannelError("discord: READY did not say who the bot is")
        self.me = str(me.id)
        self._watch = asyncio.create_task(self._watch_gateway(bot))
        return None

    async def _on_payload(self, event: hikari.ShardPayloadEvent) -> None:
        if event.name == "MESSAGE_CREATE":
            self._events.put_nowait(dict(event.payload))

    async def _on_ready(self, event: hikari.ShardReadyEvent) -> None:
        """A new Gateway session (not a resume): read back what the last one missed."""
        if self._seen:
            task = asyncio.create_task(self._read_back(event.app.rest, list(self._seen)))
            self._reading_back.add(task)
            task.add_done_callback(self._reading_back.discard)

    async def _read_back(self, rest: hikari.api.RESTClient, seen: list[tuple[str, str]]) -> None:
        for channel, last in seen:
            try:
                async for message in rest.fetch_messages(int(channel), after=int(last)).limit(
                    READ_BACK
                ):
                    self._events.put_nowait(payload_of(message))
            except Exception as exc:  # the chat is gone, the bot removed, Discord away
                log.warning(
                    "discord messages missed could not be read back",
                    extra={"chat": channel, "error": type(exc).__name__},
                )

    async def _watch_gateway(self, bot: hikari.GatewayBot) -> None:
        """Tell the reader when hikari gives the Gateway up (it reconnects by itself until then)."""
        try:
            await bot.join()
            self._events.put_nowait(ChannelError("discord: the Gateway connection closed"))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._events.put_nowait(_error(exc))

    async def receive(self) -> Batch:
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed
        waiting = [await self._events.get()]
        while not self._events.empty():
            waiting.append(self._events.get_nowait())
        found = []
        for data in waiting:
            if isinstance(data, Exception):
                if not found:
                    raise data
                self._failed = data  # what came before it is recorded first
                break
            message = inbound_of(data, self.me)
            if message is not None and message.group:
                message = await self._in_thread(message)
            if message is not None:
                found.append(message)
                self._seen.saw(str(message.reply["channel_id"]), str(message.reply["message_id"]))
        return Batch(found, self._seen.position() if found else None)

    async def _in_thread(self, message: Inbound) -> Inbound:
        """A guild message placed in its channel and thread (a thread is a channel on Discord)."""
        channel = message.chat
        if channel not in self._parents:
            try:
                found = await self.bot.rest.fetch_channel(int(channel))
            except hikari.HikariError as exc:  # answered in the channel itself, asked again later
                log.debug("discord channel not looked up", extra={"error": type(exc).__name__})
                return message
            parent = found.parent_id if isinstance(found, hikari.GuildThreadChannel) else None
            self._parents[channel] = str(parent) if parent else ""
            while len(self._parents) > PARENTS_KEPT:
                del self._parents[next(iter(self._parents))]
        parent = self._parents[channel]
        return replace(message, chat=parent, thread=channel) if parent else message

    async def send(self, to: Inbound, text: str) -> str:
        try:
            channel, content, options = _answering(to, text)
            sent = await self.bot.rest.create_message(channel, content, **options)
        except hikari.HikariError as exc:
            raise _error(exc) from None
        return f"{sent.channel_id}:{sent.id}"

    async def send_file(
        self, to: Inbound, name: str, media_type: str, data: bytes, caption: str = ""
    ) -> str:
        """A message with the file attached (Discord shows an image inline itself), the
        caption its text, replying as the answer does."""
        attachment = hikari.Bytes(data, name, mimetype=media_type)
        try:
            channel, content, options = _answering(to, caption or hikari.UNDEFINED)
            sent = await self.bot.rest.create_message(
                channel, content, attachment=attachment, **options
            )
        except hikari.ClientHTTPResponseError as exc:
            if exc.status == 413:  # over the upload limit: no retry makes it smaller
                raise NotSendable(f"discord: {exc.status} {exc.message}") from None
            raise _error(exc) from None
        except hikari.HikariError as exc:
            raise _error(exc) from None
        return f"{sent.channel_id}:{sent.id}"

    async def typing(self, to: Inbound) -> None:
        channel = int(to.reply.get("channel_id") or to.thread or to.chat)
        await self.bot.rest.trigger_typing(channel)

    async def fetch(self, attachment: AttachmentRef, limit: int) -> bytes:
        """The attachment from Discord's CDN (``attachment_hosts``); any other link is refused."""
        if attachment.size is not None and attachment.size > limit:
            raise TooLarge(attachment.kind)
        host = (urllib.parse.urlsplit(attachment.ref).hostname or "").lower()
        if not secure(attachment.ref) or host not in self.settings.attachment_hosts:
            raise ChannelError(f"discord: the {attachment.kind} is not on Discord's CDN")
        if self._http is None:
            raise ChannelError("discord: not connected")
        timeout = aiohttp.ClientTimeout(total=60)
        async with self._http.get(attachment.ref, allow_redirects=False, timeout=timeout) as got:
            return await bounded(got, limit, attachment.kind, "discord")

    async def close(self) -> None:
        bot, self._bot = self._bot, None
        http, self._http = self._http, None
        watch, self._watch = self._watch, None
        for task in [*self._reading_back, *([watch] if watch else [])]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if bot is not None:
            with contextlib.suppress(Exception):
                await bot.close()
        if http is not None:
            await http.close()


def _error(exc: BaseException) -> ChannelError:
    """hikari's failure as the service understands it: a person's to fix, or a retry."""
    if isinstance(exc, hikari.UnauthorizedError):
        return Misconfigured("discord: the bot token was refused")
    if isinstance(exc, hikari.GatewayServerClosedConnectionError):
        refused = REFUSED_CODES.get(int(exc.code or 0))
        if refused:
            return Misconfigured(f"discord: {refused}")
        return ChannelError(f"discord: the Gateway closed ({exc.code})")
    if isinstance(exc, hikari.ForbiddenError):
        return ChannelError("discord: the bot lacks a permission in this channel")
    if isinstance(exc, hikari.RateLimitTooLongError):
        return ChannelError(f"discord: rate limited for {exc.retry_after:.0f} s")
    if isinstance(exc, hikari.HTTPResponseError):
        return ChannelError(f"discord: {exc.status} {exc.message}")
    return ChannelError(f"discord: {type(exc).__name__}: {exc}")


def cursor_of(position: str | None) -> Seen:
    """The stored cursor: each recent chat's (channel's or thread's) last message recorded."""
    return Seen(position, SNOWFLAKE, SNOWFLAKE, int)


def _answering(to: Inbound, content: Any) -> tuple[int, Any, dict[str, Any]]:
    """Where an answer to ``to`` goes (its thread or chat), and how: a reply to the
    message, which never pings anyone (no @everyone, no role, no user from a model's
    text)."""
    replied = to.reply.get("message_id")
    options: dict[str, Any] = {
        "reply": int(replied) if replied else hikari.UNDEFINED,
        "reply_must_exist": False,
        "mentions_everyone": False,
        "user_mentions": False,
        "role_mentions": False,
        "mentions_reply": False,
    }
    return int(to.reply.get("channel_id") or to.thread or to.chat), content, options
