"""Attachments a session may read: allowed types, bounded sizes, names the daemon chooses.

What a sender attached is fetched only when its declared type is allowed and
its declared size fits; the bytes must then look like that type. Each becomes
a :class:`SessionFile` named ``attachment-N.ext``: the sender's own file name
is mentioned to the runtime as data, never used as a path.
"""

from __future__ import annotations

from collections.abc import Sequence

from butler.channels.base import Channel, TooLarge
from butler.channels.message import AttachmentRef
from butler.channels.text import one_line
from butler.config.channels import ChannelSettings
from butler.spawner.workspace import SessionFile

#: The first bytes each binary type starts with (several forms for some).
SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "application/pdf": (b"%PDF-",),
    "audio/ogg": (b"OggS",),
    "audio/mpeg": (b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"),
}
EXTENSIONS = {
    "image/jpeg": ".jpg",
    "image/png": ".png",
    "image/webp": ".webp",
    "image/gif": ".gif",
    "application/pdf": ".pdf",
    "text/plain": ".txt",
    "text/csv": ".csv",
    "text/markdown": ".md",
    "audio/ogg": ".ogg",
    "audio/mpeg": ".mp3",
    "audio/mp4": ".m4a",
}


class AttachmentRefused(Exception):
    """An attachment the channel does not take; the message says which and why, in one line."""


def looks_like(media_type: str, data: bytes) -> bool:
    """Whether ``data`` starts as ``media_type`` does (text must be UTF-8 without NUL)."""
    if media_type.startswith("text/"):
        try:
            return "\x00" not in data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    if media_type == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    if media_type == "audio/mp4":
        return data[4:8] == b"ftyp"
    signatures = SIGNATURES.get(media_type)
    return signatures is None or data.startswith(signatures)


def check(attachments: Sequence[AttachmentRef], settings: ChannelSettings) -> None:
    """Refuse, before fetching anything, what the declared types and sizes rule out."""
    if len(attachments) > settings.max_attachments:
        raise AttachmentRefused(
            f"{len(attachments)} attachments is more than the {settings.max_attachments} "
            "a message may carry"
        )
    for ref in attachments:
        if ref.refusal:
            raise AttachmentRefused(ref.refusal)
        if ref.media_type not in settings.attachment_types:
            raise AttachmentRefused(
                f"a {ref.kind} of type {one_line(ref.media_type, 80)} is not accepted; "
                f"accepted: {', '.join(settings.attachment_types)}"
            )
        if ref.size is not None and ref.size > settings.max_attachment_bytes:
            raise AttachmentRefused(_too_large(ref, settings))


async def fetch_all(
    channel: Channel, attachments: Sequence[AttachmentRef], settings: ChannelSettings
) -> tuple[SessionFile, ...]:
    """Every attachment as a file for the session.

    :class:`AttachmentRefused` for the first that is not acceptable."""
    check(attachments, settings)
    files = []
    for number, ref in enumerate(attachments, 1):
        try:
            data = await channel.fetch(ref, settings.max_attachment_bytes)
        except TooLarge:
            raise AttachmentRefused(_too_large(ref, settings)) from None
        files.append(session_file(number, ref, data))
    return tuple(files)


def session_file(number: int, ref: AttachmentRef, data: bytes) -> SessionFile:
    """Attachment ``number`` of a message as the session's file.

    :class:`AttachmentRefused` unless its bytes look like the type it claims."""
    if not looks_like(ref.media_type, data):
        raise AttachmentRefused(
            f"the {ref.kind} does not look like the {ref.media_type} it says it is"
        )
    note = ref.describe() if ref.size is not None else f"{ref.kind}, {ref.media_type}"
    if ref.name:
        note += f", sent as {one_line(ref.name, 80)!r}"
    name = f"attachment-{number}{EXTENSIONS.get(ref.media_type, '')}"
    return SessionFile(name, data, note)


def _too_large(ref: AttachmentRef, settings: ChannelSettings) -> str:
    limit = settings.max_attachment_bytes
    return f"the {ref.kind} is larger than the {limit // 1024} KiB an attachment may be"
