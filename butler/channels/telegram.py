"""Telegram: a bot reached by long polling (``getUpdates``), so no public address is needed.

Built on python-telegram-bot's :class:`telegram.Bot` alone (not its
Application framework): the daemon owns the loop, the cursor and the
retries. The cursor is the next update offset; Telegram forgets updates
only once a later ``getUpdates`` names a higher one, so a message recorded
just before a crash is delivered again and recognised, never lost.

An album (several photos or files sent at once) comes as one update per item
sharing a ``media_group_id``, the last ones maybe a moment later: the channel
waits :data:`ALBUM_WAIT_S` for the rest (reading again from the same offset,
so nothing is confirmed before it is recorded) and makes it one message.

In a group the bot hears what is addressed to it (a command, an
``@username`` mention, a reply to one of its messages) whatever its privacy
mode lets through, and leaves at once a group that is not on ``groups``.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from dataclasses import replace
from datetime import timedelta
from typing import Any

from telegram import Bot, InputFile, Message, MessageEntity, ReplyParameters, Update, User
from telegram.constants import ChatAction, ChatMemberStatus, ChatType
from telegram.error import BadRequest, InvalidToken, RetryAfter, TelegramError
from telegram.request import HTTPXRequest

from butler.channels.base import (
    Channel,
    ChannelError,
    Misconfigured,
    NotSendable,
    Paced,
    TooLarge,
)
from butler.channels.files_out import IMAGES
from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.channels.text import utf16_units
from butler.config.channels import TelegramSettings

log = logging.getLogger(__name__)

#: How long the rest of an album may take to arrive after its first items.
ALBUM_WAIT_S = 1
#: What Telegram takes in one message, counted in UTF-16 code units.
MAX_MESSAGE = 4096
#: The largest photo a bot uploads (a larger image goes as a document).
MAX_PHOTO_BYTES = 10 * 1000 * 1000
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
    #: What a bot may upload as a document.
    max_file_bytes = 50 * 1000 * 1000

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
        updates = await self._updates(self.settings.poll_timeout_s)
        while updates and _in_album(updates[-1]):  # the rest of the album, a moment later
            more = await self._updates(ALBUM_WAIT_S)
            if len(more) <= len(updates):
                break
            updates = more
        if not updates:
            return Batch([])
        self._offset = updates[-1].update_id + 1
        for update in updates:
            await self._added(update)
        found = [(update, inbound_of(update, self.bot.bot)) for update in updates]
        return Batch(albums([(u, m) for u, m in found if m is not None]), str(self._offset))

    async def _updates(self, timeout: float) -> tuple[Update, ...]:
        """What waits from the cursor on (read again, not confirmed, until recorded)."""
        try:
            return await self.bot.get_updates(
                offset=self._offset,
                timeout=timeout,
                allowed_updates=["message", "my_chat_member"],
            )
        except TelegramError as exc:
            raise ChannelError(f"telegram: {exc}") from None

    async def _added(self, update: Update) -> None:
        """Leave a group the bot was just added to, unless it is on the allow-list."""
        change = update.my_chat_member
        if change is None or change.chat.type not in (ChatType.GROUP, ChatType.SUPERGROUP):
            return
        joined = change.new_chat_member.status in (
            ChatMemberStatus.MEMBER,
            ChatMemberStatus.ADMINISTRATOR,
        )
        if joined and not self.settings.allows_group(str(change.chat.id)):
            log.warning(
                "left a group not on the channel's allow-list",
                extra={"channel": self.kind, "chat": str(change.chat.id)},
            )
            with contextlib.suppress(ChannelError):  # a batch is never lost to a farewell
                await self.leave(str(change.chat.id))

    async def leave(self, chat: str) -> bool:
        try:
            await self.bot.leave_chat(int(chat))
        except TelegramError as exc:  # gone already, or never there: nothing to leave
            raise ChannelError(f"telegram: could not leave {chat}: {exc}") from None
        return True

    async def send(self, to: Inbound, text: str) -> str:
        reply_to = to.reply.get("message_id")
        try:
            sent = await self.bot.send_message(
                chat_id=int(to.chat),
                text=text,
                message_thread_id=int(to.thread) if to.thread else None,
                reply_parameters=ReplyParameters(reply_to, allow_sending_without_reply=True)
                if reply_to
                else None,
            )
        except RetryAfter as exc:  # flood control: the wait Telegram names, no sooner
            wait = seconds(exc)
            raise Paced(f"telegram: flood control, retry after {wait:g} s", wait) from None
        return f"{sent.chat_id}:{sent.message_id}"

    async def send_file(
        self, to: Inbound, name: str, media_type: str, data: bytes, caption: str = ""
    ) -> str:
        """``sendPhoto`` for an image within Telegram's photo limit, else ``sendDocument``
        (multipart uploads); a photo Telegram will not take as one goes as a document."""
        where: dict[str, Any] = {
            "chat_id": int(to.chat),
            "caption": caption or None,
            "message_thread_id": int(to.thread) if to.thread else None,
        }
        reply_to = to.reply.get("message_id")
        if reply_to:
            where["reply_parameters"] = ReplyParameters(reply_to, allow_sending_without_reply=True)
        try:
            if media_type in IMAGES and len(data) <= MAX_PHOTO_BYTES:
                try:
                    sent = await self.bot.send_photo(photo=InputFile(data, filename=name), **where)
                    return f"{sent.chat_id}:{sent.message_id}"
                except BadRequest as exc:  # dimensions or format it will not show
                    log.info(
                        "telegram took no photo; sending a document", extra={"error": str(exc)}
                    )
            sent = await self.bot.send_document(document=InputFile(data, filename=name), **where)
        except RetryAfter as exc:
            wait = seconds(exc)
            raise Paced(f"telegram: flood control, retry after {wait:g} s", wait) from None
        except BadRequest as exc:  # a file it refuses is refused again on a retry
            raise NotSendable(f"telegram: {exc.message}") from None
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


def _in_album(update: Update) -> bool:
    return bool(update.message and update.message.media_group_id)


def albums(found: list[tuple[Update, Inbound]]) -> list[Inbound]:
    """The messages, each album's items made one message: the first item's id and place,
    every item's attachments, and the words of those that have any (the caption)."""
    merged: list[Inbound] = []
    where: dict[tuple[str, str, str], int] = {}
    for update, message in found:
        album = update.message.media_group_id if update.message else None
        key = (message.chat, message.sender, str(album))
        if album and key in where:
            first = merged[where[key]]
            merged[where[key]] = replace(
                first,
                text="\n".join(t for t in (first.text, message.text) if t),
                attachments=first.attachments + message.attachments,
                addressed=first.addressed or message.addressed,
            )
            continue
        if album:
            where[key] = len(merged)
        merged.append(message)
    return merged


def seconds(flood: RetryAfter) -> float:
    """The wait a flood-control answer names (seconds, or a timedelta in later versions)."""
    with warnings.catch_warnings():  # its int form is deprecated; either form is read
        warnings.simplefilter("ignore")
        value = flood.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


def inbound_of(update: Update, bot: User) -> Inbound | None:
    """A person's message in an update; None for anything else (edits, bots, channel posts).

    The sender is the user id Telegram gives, never a name; anonymous admins and
    channels posting in a group come as bots, and are not answered.
    """
    message = update.message
    if message is None or message.from_user is None or message.from_user.is_bot:
        return None
    user = message.from_user
    thread = message.message_thread_id if message.is_topic_message else None
    group = message.chat.type in (ChatType.GROUP, ChatType.SUPERGROUP)
    addressed, text = addressed_in(message, bot) if group else (True, _words(message))
    return Inbound(
        channel="telegram",
        external_id=f"{message.chat_id}:{message.message_id}",
        chat=str(message.chat_id),
        thread=str(thread) if thread else "",
        sender=str(user.id),
        display_name=user.full_name or user.username,
        text=text,
        attachments=attachments_of(message),
        reply={"message_id": message.message_id},
        group=group,
        addressed=addressed,
        follows=_follows(message),
    )


def _follows(message: Message) -> tuple[str, ...]:
    """The message this one replies to, by the id the bot records (``chat:message``); a
    forum topic's messages reply to its opening, which is nobody's conversation."""
    replied = message.reply_to_message
    return (f"{message.chat_id}:{replied.message_id}",) if replied else ()


def _words(message: Message) -> str:
    return message.text or message.caption or ""


def addressed_in(message: Message, bot: User) -> tuple[bool, str]:
    """Whether a group message is meant for ``bot``, and its words without the mention.

    Meant for it: a reply to one of its messages, a mention of it (``@username``, or a
    mention of its account), or a command that starts the message and names no other bot.
    """
    text = _words(message)
    entities = message.parse_entities() if message.text else message.parse_caption_entities()
    own = f"@{bot.username}".lower() if bot.username else None
    replied = message.reply_to_message
    addressed = bool(replied and replied.from_user and replied.from_user.id == bot.id)
    for entity, said in sorted(entities.items(), key=lambda e: -e[0].offset):
        mentioned = (entity.type == MessageEntity.MENTION and said.lower() == own) or (
            entity.type == MessageEntity.TEXT_MENTION and entity.user and entity.user.id == bot.id
        )
        if mentioned:
            addressed = True
            text = (
                text[: _at(text, entity.offset)] + text[_at(text, entity.offset + entity.length) :]
            )
        elif entity.type == MessageEntity.BOT_COMMAND and entity.offset == 0:
            _, _, named = said.partition("@")
            addressed = addressed or not named or f"@{named}".lower() == own
    return addressed, re.sub(r"[ \t]{2,}", " ", text).strip()


def _at(text: str, units: int) -> int:
    """The index in ``text`` of the offset Telegram gives in UTF-16 code units."""
    encoded = text.encode("utf-16-le")[: units * 2]
    return len(encoded.decode("utf-16-le", errors="ignore"))


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
