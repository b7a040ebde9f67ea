"""What a Discord message says: a person's message in a ``MESSAGE_CREATE`` payload, and
its attachments.

Pure reading of the Gateway's payload, as Discord's documentation describes it;
a message read back through REST is first put in the same terms
(:func:`payload_of`), so both are read alike.
"""

from __future__ import annotations

import mimetypes
import re
from typing import Any

import hikari

from butler.channels.message import AttachmentRef, Inbound, kind_of

#: Message types that are a person's words (default, reply); joins, pins and the like are not.
SAID = {0, 19}


def payload_of(message: hikari.Message) -> dict[str, Any]:
    """A message read back by REST, in the Gateway's terms :func:`inbound_of` reads."""
    author = message.author
    replied = message.referenced_message
    replied_author = getattr(replied, "author", None) if replied else None
    return {
        "id": str(message.id),
        "channel_id": str(message.channel_id),
        "guild_id": str(message.guild_id) if message.guild_id else None,
        "type": int(message.type),
        "webhook_id": str(message.webhook_id) if message.webhook_id else None,
        "author": {
            "id": str(author.id),
            "bot": author.is_bot,
            "username": author.username,
            "global_name": author.global_name,
        },
        "content": message.content or "",
        "mentions": [{"id": str(user)} for user in message.user_mentions_ids or ()],
        "referenced_message": (
            {"author": {"id": str(replied_author.id)}}
            if isinstance(replied_author, hikari.PartialUser)
            else None
        ),
        "attachments": [
            {
                "filename": item.filename,
                "content_type": item.media_type,
                "size": item.size,
                "url": item.url,
                "duration_secs": item.duration,
            }
            for item in message.attachments
        ],
    }


def inbound_of(data: dict[str, Any], me: str) -> Inbound | None:
    """A person's message in a ``MESSAGE_CREATE`` payload; None for bots, webhooks, system lines.

    ``me`` is the bot's user id: a mention of it is taken off the text, and a
    reply to one of its messages addresses it.
    """
    author = data.get("author")
    if not isinstance(author, dict) or author.get("bot") or data.get("webhook_id"):
        return None
    user, channel, message = author.get("id"), data.get("channel_id"), data.get("id")
    if not all(isinstance(v, str) for v in (user, channel, message)) or user == me:
        return None
    if data.get("type", 0) not in SAID:
        return None
    direct = not data.get("guild_id")
    mentions = {str(m.get("id")) for m in data.get("mentions") or [] if isinstance(m, dict)}
    replied = data.get("referenced_message") or {}
    replied_author = (replied.get("author") or {}).get("id") if isinstance(replied, dict) else None
    raw = data.get("content") if isinstance(data.get("content"), str) else ""
    text = re.sub(rf"\s*<@!?{re.escape(me)}>\s*", " ", raw).strip() if me else raw
    member = data.get("member") if isinstance(data.get("member"), dict) else {}
    name = member.get("nick") or author.get("global_name") or author.get("username")
    return Inbound(
        channel="discord",
        external_id=f"{channel}:{message}",
        chat=str(channel),
        thread="",
        sender=str(user),
        display_name=name if isinstance(name, str) else None,
        text=text,
        attachments=attachments_of(data),
        reply={"message_id": message, "channel_id": channel},
        group=not direct,
        addressed=direct or me in mentions or replied_author == me,
    )


def attachments_of(data: dict[str, Any]) -> tuple[AttachmentRef, ...]:
    """What came with a message; its type is Discord's, or guessed from the file's name."""
    found = []
    for item in data.get("attachments") or []:
        if not isinstance(item, dict):
            continue
        name = item.get("filename") if isinstance(item.get("filename"), str) else None
        guessed = mimetypes.guess_type(name)[0] if name else None
        media = str(item.get("content_type") or guessed or "application/octet-stream")
        media = media.split(";")[0].strip()
        kind = kind_of(media)
        if item.get("duration_secs") is not None and kind == "audio":
            kind = "voice"
        size = item.get("size") if isinstance(item.get("size"), int) else None
        found.append(AttachmentRef(kind, media, size, str(item.get("url") or ""), name))
    return tuple(found)
