"""What a Matrix event says: who invited the bot, what a message follows, its words, its
files, and whether a room message is addressed to the bot.

Pure reading of the client-server API's event content, apart from the client
(:mod:`.matrix` asks the homeserver what these cannot tell: the room's members,
the event a message replies to).
"""

from __future__ import annotations

from typing import Any

from nio import InviteMemberEvent

from butler.channels.message import AttachmentRef

ENCRYPTED = (
    "this room is end-to-end encrypted, which the butler's Matrix channel does not read; "
    "talk to it in a room without encryption (docs/channels.md)"
)
FILES = {"m.image": "image", "m.file": "file", "m.audio": "audio"}


def inviter_of(invite_state: list[Any], bot: str) -> str | None:
    """Who invited the bot: the sender of the bot's own ``invite`` membership event, which
    the homeserver hands over with the invite."""
    for event in invite_state:
        if (
            isinstance(event, InviteMemberEvent)
            and event.state_key == bot
            and event.membership == "invite"
        ):
            return event.sender
    return None


def addressing(content: dict[str, Any], text: str, bot: str, own: str | None) -> tuple[bool, str]:
    """Whether a room message mentions the bot or is a command, and its words without a
    leading mention."""
    mentions = content.get("m.mentions")
    named = isinstance(mentions, dict) and bot in (mentions.get("user_ids") or [])
    formatted = content.get("formatted_body")
    linked = isinstance(formatted, str) and f"matrix.to/#/{bot}" in formatted
    said = bot in text
    for name in (bot, own):
        if name and text.lower().startswith(name.lower()):
            rest = text[len(name) :]
            if not rest or rest[0] in ":, \n":
                text = rest.lstrip(":, \n")
                said = True
                break
    return named or linked or said or text.startswith("/"), text


def follows_of(relates: dict[str, Any]) -> tuple[str, ...]:
    """The events a message follows: the root of its thread, the event it replies to (in a
    thread, the latest one there, which a client names as a fallback)."""
    found = []
    if relates.get("rel_type") == "m.thread":
        found.append(relates.get("event_id"))
    replied = relates.get("m.in_reply_to")
    if isinstance(replied, dict):
        found.append(replied.get("event_id"))
    return tuple(e for e in found if isinstance(e, str) and e)


def text_of(content: dict[str, Any]) -> str:
    """The message's words (a file's body is its name, not words)."""
    if content.get("msgtype") in ("m.text", "m.emote"):
        body = content.get("body")
        return body if isinstance(body, str) else ""
    return ""


def attachments_of(content: dict[str, Any]) -> tuple[AttachmentRef, ...]:
    kind = content.get("msgtype")
    if kind in ("m.text", "m.emote"):
        return ()
    if kind == "m.encrypted":
        encrypted = "application/x-matrix-encrypted"
        return (AttachmentRef("encrypted message", encrypted, None, "", refusal=ENCRYPTED),)
    if kind not in FILES:
        name = str(kind)[:40]
        return (AttachmentRef(name.removeprefix("m."), f"application/x-matrix-{name}", None, ""),)
    info = content.get("info") if isinstance(content.get("info"), dict) else {}
    size = info.get("size") if isinstance(info.get("size"), int) else None
    media = str(info.get("mimetype") or "application/octet-stream")
    name = content.get("body") if isinstance(content.get("body"), str) else None
    return (AttachmentRef(FILES[kind], media, size, str(content.get("url") or ""), name),)
