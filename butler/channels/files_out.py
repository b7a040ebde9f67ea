"""A file a session sends the person who asked it: its type, its name, its bounds.

The bytes are the session's (a runtime wrote them), so what they are is read
from the bytes, not taken from the name: a file named ``cat.png`` holding
text goes as text, and only bytes that start as an image does go as one
(shown in the chat; anything else is a document to download). The name sent
is the file's own, cut to letters, digits, ``.``, ``_`` and ``-``.

Bounded three ways: the channel's ``max_attachment_bytes`` (the same bound
as files coming in, 10 MiB by default), the platform's own limit, and at
most :data:`MAX_FILES_PER_ANSWER` files for one answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from butler.channels.attachments import EXTENSIONS, SIGNATURES, looks_like

#: Files one session may send while it answers one message.
MAX_FILES_PER_ANSWER = 10
#: Longest caption sent with a file (Telegram's limit, the smallest of the platforms).
MAX_CAPTION_CHARS = 1024
#: Types shown as a picture in the chat where the platform has pictures.
IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
#: Bytes of a file the types in the name's extension are believed for, when the bytes are
#: text: a ``.csv`` is text/csv; any other text is text/plain.
TEXT_EXTENSIONS = {".csv": "text/csv", ".md": "text/markdown"}
#: What a file nothing recognises is sent as: data to download, never shown or run.
UNKNOWN = "application/octet-stream"
#: Extensions a text file keeps; any other text is sent as ``.txt``.
TEXT_SUFFIXES = frozenset(
    {".txt", ".csv", ".tsv", ".md", ".json", ".log", ".ics", ".vcf", ".yaml", ".yml"}
)
#: Extensions other bytes keep (documents, archives); any other is sent as ``.bin``.
DATA_SUFFIXES = frozenset(
    {".zip", ".gz", ".tar", ".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp", ".epub"}
)
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class FileOut:
    """A file on its way to a person: the name and type it is sent as, its bytes, a caption."""

    name: str
    media_type: str
    data: bytes
    caption: str = ""

    @property
    def image(self) -> bool:
        """Whether it goes as a picture (where the platform shows pictures)."""
        return self.media_type in IMAGES

    def describe(self) -> str:
        """One line for the conversation's record and the session's answer."""
        return f"{self.name} ({self.media_type}, {len(self.data)} bytes)"


#: The binary types told by their first bytes (each has a signature :func:`looks_like` checks).
BINARY = (*SIGNATURES, "image/webp", "audio/mp4")


def sniffed(name: str, data: bytes) -> str:
    """The media type ``data`` is, read from its bytes; the name only tells text apart."""
    for media_type in BINARY:
        if data and looks_like(media_type, data):
            return media_type
    if looks_like("text/plain", data):
        return TEXT_EXTENSIONS.get(PurePosixPath(name.lower()).suffix, "text/plain")
    return UNKNOWN


def sent_name(path: str, media_type: str) -> str:
    """The name the person sees: the file's own, safe characters only, with an extension
    that says what the bytes are. An image, a PDF or audio gets its type's (a PNG named
    ``.txt`` is shown as ``.png``); text keeps a text extension of its own (``.json``),
    else ``.txt``; other bytes keep a data extension of their own (``.zip``), else
    ``.bin``, so nothing arrives looking like a program or a page to open."""
    pure = PurePosixPath(path)
    stem = _UNSAFE_NAME.sub("_", pure.stem).strip("._")[:100] or "file"
    own = pure.suffix.lower()
    if media_type.startswith("text/") and own in TEXT_SUFFIXES:
        return stem + own
    if media_type == UNKNOWN:
        return stem + (own if own in DATA_SUFFIXES else ".bin")
    return stem + EXTENSIONS.get(media_type, ".txt")


def caption_of(caption: str) -> str:
    """The caption as sent: at most :data:`MAX_CAPTION_CHARS`, marked where cut."""
    caption = caption.strip()
    if len(caption) <= MAX_CAPTION_CHARS:
        return caption
    return caption[: MAX_CAPTION_CHARS - 1].rstrip() + "…"
