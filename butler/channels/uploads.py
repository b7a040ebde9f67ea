"""What a person sends from a browser, bounded like any channel's message: text and files.

Pure. A message's text is at most ``max_message_chars``; its files are taken
by the same rules as a chat's attachments (:mod:`.attachments`): at most
``max_attachments``, each of an accepted type and at most
``max_attachment_bytes``, its bytes looking like that type, placed in the
session's workspace under a name the daemon chooses. The file's own name and
the type the browser declared are the person's words, data only; a type the
browser could not name (it often cannot for ``.md``) is read from the name's
extension, and the bytes must still agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from butler.channels.attachments import EXTENSIONS, AttachmentRefused, check, session_file
from butler.channels.message import AttachmentRef, kind_of
from butler.channels.text import one_line
from butler.config.channels import ChannelSettings
from butler.spawner.workspace import SessionFile

#: What a multipart body may add around its text and files (boundaries, part headers).
ENVELOPE_BYTES = 64 * 1024
#: Each file's own extension, for a browser that declares no type.
BY_EXTENSION = {
    **{extension: media for media, extension in EXTENSIONS.items()},
    ".jpeg": "image/jpeg",
    ".markdown": "text/markdown",
}
#: Types a browser gives a file it cannot name.
UNNAMED = ("", "application/octet-stream")


@dataclass(frozen=True)
class Upload:
    """One file as the browser sent it; ``name`` and ``media_type`` are the person's words."""

    name: str
    media_type: str
    data: bytes


def max_body_bytes(settings: ChannelSettings) -> int:
    """The largest request body a message may be: its text, its files and their envelope."""
    text = settings.max_message_chars * 4  # UTF-8 takes at most four bytes a character
    return text + settings.max_attachments * settings.max_attachment_bytes + ENVELOPE_BYTES


def check_text(text: str, has_files: bool, settings: ChannelSettings) -> None:
    """Refuse a message that is empty, or longer than a message may be."""
    if not text.strip() and not has_files:
        raise AttachmentRefused("the message is empty; write something or attach a file")
    if len(text) > settings.max_message_chars:
        raise AttachmentRefused(
            f"that message is longer than the {settings.max_message_chars} characters "
            "a message may be"
        )


def media_type_of(upload: Upload) -> str:
    """The type the browser declared, else the one the file's extension names."""
    declared = upload.media_type.split(";")[0].strip().lower()
    if declared not in UNNAMED:
        return declared
    dot = upload.name.rfind(".")
    extension = upload.name[dot:].lower() if dot > 0 else ""
    return BY_EXTENSION.get(extension, declared or "application/octet-stream")


def session_files(uploads: Sequence[Upload], settings: ChannelSettings) -> tuple[SessionFile, ...]:
    """Every upload as a file for the session.

    :class:`AttachmentRefused` for the first that is not acceptable."""
    refs = []
    for upload in uploads:
        media = media_type_of(upload)
        size = len(upload.data)
        refs.append(AttachmentRef(kind_of(media), media, size, "upload", upload.name or None))
    check(refs, settings)  # count, types and sizes, before any byte is looked at
    for ref in refs:
        if not ref.size:
            named = f" {one_line(ref.name, 80)!r}" if ref.name else ""
            raise AttachmentRefused(f"the {ref.kind}{named} is empty")
    return tuple(
        session_file(number, ref, upload.data)
        for number, (ref, upload) in enumerate(zip(refs, uploads, strict=True), 1)
    )
