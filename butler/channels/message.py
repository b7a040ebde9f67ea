"""What crosses between a channel and the inbox: a message in, its attachments."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class AttachmentRef:
    """An attachment as the channel announced it, not yet fetched."""

    #: photo, document, voice, audio, image or file.
    kind: str
    media_type: str
    #: The size the channel declared, when it did.
    size: int | None
    #: The handle the channel fetches it by (a Telegram file id, an mxc:// address).
    ref: str
    #: The sender's own file name: shown to the runtime as data, never used as a path.
    name: str | None = None
    #: Why the channel cannot take it at all, when it knows (an encrypted message).
    refusal: str | None = None

    def describe(self) -> str:
        size = f", {self.size} bytes" if self.size is not None else ""
        return f"{self.kind}, {self.media_type}{size}"


def kind_of(media_type: str) -> str:
    """What a person would call a file of ``media_type``: image, audio or file."""
    for kind in ("image", "audio"):
        if media_type.startswith(f"{kind}/"):
            return kind
    return "file"


@dataclass(frozen=True)
class Inbound:
    """One message a channel received, in the terms every channel shares."""

    #: The channel's kind: telegram, matrix, email, slack or discord.
    channel: str
    #: The channel's own id of the message; unique within the channel.
    external_id: str
    #: Where the reply goes: a Telegram chat, a Matrix room, an email address.
    chat: str
    #: A thread within the chat ("" for none): a forum topic, a Matrix thread, an email thread.
    thread: str
    #: Who sent it, as the channel identifies them (what pairing records).
    sender: str
    display_name: str | None
    text: str
    attachments: tuple[AttachmentRef, ...] = ()
    #: What the channel needs to answer in place (the message replied to, email headers).
    reply: dict[str, Any] = field(default_factory=dict)
    #: Why the channel could not prove that ``sender`` sent it (an email without a valid
    #: DKIM signature of its From domain); None when the platform vouches for the id.
    unproven: str | None = None
    #: Said in a group (a channel, a guild, a room of several) rather than to the bot alone.
    group: bool = False
    #: Said to the bot: a direct message, a mention of it, a reply to one of its messages,
    #: or (where the platform marks one) a command.
    addressed: bool = False
    #: The channel's ids of the messages this one follows (a Matrix thread's root, the
    #: message it replies to): the conversation they belong to is the one it continues.
    follows: tuple[str, ...] = ()

    def payload(self) -> dict[str, Any]:
        """What the table keeps to handle the message again after a restart."""
        return {
            "reply": self.reply,
            "attachments": [asdict(a) for a in self.attachments],
            "unproven": self.unproven,
            "group": self.group,
            "addressed": self.addressed,
            "follows": list(self.follows),
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Inbound:
        """A recorded message, as it was received."""
        payload = row.get("payload") or {}
        return cls(
            channel=row["channel"],
            external_id=row["external_id"],
            chat=row["chat"],
            thread=row["thread"],
            sender=row["sender"],
            display_name=row.get("display_name"),
            text=row["body"],
            attachments=tuple(AttachmentRef(**a) for a in payload.get("attachments", [])),
            reply=payload.get("reply") or {},
            unproven=payload.get("unproven"),
            group=bool(payload.get("group", False)),
            addressed=bool(payload.get("addressed", False)),
            follows=tuple(str(f) for f in payload.get("follows") or ()),
        )


@dataclass(frozen=True)
class Batch:
    """What one read of a channel brought, and where the next read starts."""

    messages: list[Inbound]
    #: The channel's cursor after these messages (None: unchanged).
    position: str | None = None
