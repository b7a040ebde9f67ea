"""Telegram: a bot reached by long polling (``getUpdates``), so no public address is needed.

Built on python-telegram-bot's :class:`telegram.Bot` alone (not its
Application framework): the daemon owns the loop, the cursor and the
retries. The cursor is the next update offset; Telegram forgets updates
only once a later ``getUpdates`` names a higher one, so a message recorded
just before a crash is delivered again and recognised, never lost.
"""

from __future__ import annotations

from typing import Any

from telegram import Bot, Message, ReplyParameters, Update
from telegram.constants import ChatAction
from telegram.error import InvalidToken, TelegramError
from telegram.request import HTTPXRequest

from butler.channels.base import Channel, ChannelError, Misconfigured, TooLarge
from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.channels.text import utf16_units
from butler.config.channels import TelegramSettings

#: What Telegram takes in one message, counted in UTF-16 code units.
MAX_MESSAGE = 4096
#: Kinds of file a message may carry, with the media type assumed when Telegram gives none.
FILES = (
    ("document", "application/octet-stream"),
    ("voice", "audio/ogg"),
    ("audio", "audio/mpeg"),
)


class TelegramChannel(Channel):
    """A Telegram bot, by long polling."""

    kind = "telegram"
    settings: TelegramSettings

    def __init__(self, settings: TelegramSettings) -> None:
        super().__init__(settings)
        self._bot: Bot | None = None
        self._offset: int | None = None

    @property
    def max_reply_chars(self) -> int:
        return MAX_MESSAGE

    def measure(self, text: str) -> int:
        return utf16_units(text)

    @property
    def bot(self) -> Bot:
        if self._bot is None:
            raise ChannelError("telegram: not connected")
        return self._bot

    async def connect(self, secret: str, position: str | None) -> str | None:
        poll = self.settings.poll_timeout_s
        api = self.settings.api_url
        bot = Bot(
            secret,
            base_url=f"{api}/bot",
            base_file_url=f"{api}/file/bot",
            request=HTTPXRequest(connection_pool_size=8, read_timeout=30),
            get_updates_request=HTTPXRequest(read_timeout=poll + 15),
        )
        try:
            await bot.initialize()  # getMe: a wrong token fails here, with one clear line
        except InvalidToken:
            raise Misconfigured(
                "telegram: the bot token was refused; expected BotFather's token"
            ) from None
        except TelegramError as exc:
            raise ChannelError(f"telegram: {exc}") from None
        self._bot = bot
        self._offset = int(position) if position else None
        return None

    async def receive(self) -> Batch:
        try:
            updates = await self.bot.get_updates(
                offset=self._offset,
                timeout=self.settings.poll_timeout_s,
                allowed_updates=["message"],
            )
        except TelegramError as exc:
            raise ChannelError(f"telegram: {exc}") from None
        if not updates:
            return Batch([])
        self._offset = updates[-1].update_id + 1
        found = [inbound_of(update) for update in updates]
        return Batch([m for m in found if m is not None], str(self._offset))

    async def send(self, to: Inbound, text: str) -> str:
        reply_to = to.reply.get("message_id")
        sent = await self.bot.send_message(
            chat_id=int(to.chat),
            text=text,
            message_thread_id=int(to.thread) if to.thread else None,
            reply_parameters=ReplyParameters(reply_to, allow_sending_without_reply=True)
            if reply_to
            else None,
        )
        return f"{sent.chat_id}:{sent.message_id}"

    async def typing(self, to: Inbound) -> None:
        await self.bot.send_chat_action(
            chat_id=int(to.chat),
            action=ChatAction.TYPING,
            message_thread_id=int(to.thread) if to.thread else None,
        )

    async def fetch(self, attachment: AttachmentRef, limit: int) -> bytes:
        try:
            file = await self.bot.get_file(attachment.ref)
        except TelegramError as exc:
            raise ChannelError(f"telegram: cannot fetch the {attachment.kind}: {exc}") from None
        if file.file_size is not None and file.file_size > limit:
            raise TooLarge(attachment.kind)
        data = bytes(await file.download_as_bytearray())
        if len(data) > limit:
            raise TooLarge(attachment.kind)
        return data

    async def close(self) -> None:
        bot, self._bot = self._bot, None
        if bot is not None:
            await bot.shutdown()


def inbound_of(update: Update) -> Inbound | None:
    """A person's message in an update; None for anything else (edits, bots, channel posts)."""
    message = update.message
    if message is None or message.from_user is None or message.from_user.is_bot:
        return None
    user = message.from_user
    thread = message.message_thread_id if message.is_topic_message else None
    return Inbound(
        channel="telegram",
        external_id=f"{message.chat_id}:{message.message_id}",
        chat=str(message.chat_id),
        thread=str(thread) if thread else "",
        sender=str(user.id),
        display_name=user.full_name or user.username,
        text=message.text or message.caption or "",
        attachments=attachments_of(message),
        reply={"message_id": message.message_id},
    )


def attachments_of(message: Message) -> tuple[AttachmentRef, ...]:
    """What came with a message; kinds the butler does not take get a type it refuses."""
    found: list[AttachmentRef] = []
    if message.photo:
        largest = max(message.photo, key=lambda p: (p.file_size or 0, p.width * p.height))
        found.append(AttachmentRef("photo", "image/jpeg", largest.file_size, largest.file_id))
    for kind, default in FILES:
        item: Any = getattr(message, kind)
        if item is not None:
            name = getattr(item, "file_name", None)
            media = item.mime_type or default
            found.append(AttachmentRef(kind, media, item.file_size, item.file_id, name))
    for kind in ("video", "video_note", "animation", "sticker", "location", "contact", "poll"):
        if getattr(message, kind) is not None:
            found.append(AttachmentRef(kind, f"application/x-telegram-{kind}", None, ""))
    return tuple(found)
