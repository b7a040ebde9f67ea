"""The ``send_file`` tool: a session answering a chat message sends the person a file.

The daemon sends it, through the channel the message came on, into the same
chat and thread; the runtime keeps no network. What the session names is its
own data, so the file is read through :mod:`butler.security.untrusted` (no
link followed on the way, a regular file only, at most the bound) and its
type is read from its bytes (:mod:`butler.channels.files_out`); it is sent,
never opened or run.

Where the file may be: relative to the folder the session runs in (the
butler folder), or an absolute path inside that folder or inside the
session's own home (``$HOME``), which every session may write, a chat
sender's too (whose butler folder is read-only).

A session run on a worker is refused: its folder and home are on the
worker's machine, which the daemon cannot read (docs/channels.md).
"""

# No postponed annotations: FastMCP reads the argument types (and their bounds) at runtime.
import asyncio
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import Field

from butler.channels.files_out import (
    MAX_CAPTION_CHARS,
    MAX_FILES_PER_ANSWER,
    FileOut,
    caption_of,
    sent_name,
    sniffed,
)
from butler.channels.web_message import CHANNEL as WEB
from butler.context import ButlerContext
from butler.paths import butler_dir
from butler.security import untrusted
from butler.security.caller import current_caller

if TYPE_CHECKING:  # the channels' running parts load only where channels run
    from butler.channels.chat_commands import Running
    from butler.channels.live import LiveChannel

#: Longest path a session may give.
MAX_PATH_CHARS = 1024

FilePath = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]
Caption = Annotated[str, Field(max_length=MAX_CAPTION_CHARS * 4)]


class NotSent(Exception):
    """Why a file was not sent, in one line for the session."""


def register_send_file_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``send_file`` to ``mcp``."""

    @mcp.tool
    async def send_file(path: FilePath, caption: Caption = "") -> str:
        """Send the person who asked this session a file, in the chat they asked in.

        ``path`` is relative to the folder the session runs in, or an absolute path
        inside it or inside the session's home ($HOME). An image (PNG, JPEG, GIF,
        WebP) is shown as a picture where the chat app shows pictures; any other file
        is a document to download. At most 10 MiB (less where the channel says so)
        and 10 files per answer. Answers in one line: sent, or not sent and why.
        """
        try:
            return await deliver(butler, path, caption)
        except NotSent as exc:
            raise ToolError(f"send_file: not sent: {exc}") from None


async def deliver(butler: ButlerContext, path: str, caption: str) -> str:
    """Send the calling session's file to its chat; the line saying so, or NotSent."""
    session_id = current_caller().session_id
    if session_id is None:
        raise NotSent("only a session answering a chat message has a chat to send to")
    row = await butler.sessions.get(session_id) or {}
    meta = row.get("metadata") or {}
    channel = meta.get("channel")
    if not channel:
        raise NotSent("this session was not asked on a chat channel; use notify")
    if meta.get("worker"):
        raise NotSent(
            f"this session runs on the worker {meta['worker']}, whose files the daemon "
            "cannot read; say what is in the file in the answer instead"
        )
    if channel == WEB:
        return await _to_web_chat(butler, session_id, path, caption)
    found = _answering(butler, session_id)
    if found is None:
        raise NotSent(f"this session is not answering a {channel} message now")
    link, running = found
    if running.files_sent >= MAX_FILES_PER_ANSWER:
        raise NotSent(f"this answer sent {MAX_FILES_PER_ANSWER} files already, the most it may")
    settings = link.channel.settings
    limit = min(settings.max_attachment_bytes, link.channel.max_file_bytes)
    file = await _read(butler, session_id, path, caption, limit)
    running.files_sent += 1
    assert running.message is not None
    why = await link.send_file(
        running.message,
        file,
        butler=running.butler,
        conversation_id=running.conversation_id,
        session_id=session_id,
    )
    if why is not None:
        raise NotSent(f"{link.kind} refused it: {why}")
    return f"sent {file.describe()} to the {link.kind} chat"


async def _to_web_chat(butler: ButlerContext, session_id: str, path: str, caption: str) -> str:
    chat = butler.web_chat
    file = await _read(butler, session_id, path, caption, chat.outbox.max_bytes)
    if chat.send_file(session_id, file.name, file.media_type, file.data) is None:
        raise NotSent("this session is not answering a web chat message now")
    return f"sent {file.describe()} to the web chat"


def _answering(butler: ButlerContext, session_id: str) -> "tuple[LiveChannel, Running] | None":
    """The channel and the answer the session writes, among the channels of this process
    (its own butler's, or the switchboard's home butler's)."""
    for host in (butler, *butler.peers):
        if host.channels is not None:
            found = host.channels.answering(session_id)
            if found is not None:
                return found
    return None


async def _read(
    butler: ButlerContext, session_id: str, path: str, caption: str, limit: int
) -> FileOut:
    home = butler_dir(butler.config) / "homes" / session_id
    root, relative = located(Path(butler.config.config_dir), home, path)
    data = await asyncio.to_thread(read_bounded, root, relative, limit)
    media_type = sniffed(relative.name, data)
    return FileOut(sent_name(relative.name, media_type), media_type, data, caption_of(caption))


def located(folder: Path, home: Path, given: str) -> tuple[Path, PurePosixPath]:
    """The trusted root ``given`` is read below, and its path relative to that root."""
    if "\x00" in given:
        raise NotSent("expected a file path, found a NUL character")
    path = PurePosixPath(given)
    if path.is_absolute():
        for root in (folder, home):
            for form in (root, root.resolve()):
                if path.is_relative_to(form):
                    return root, path.relative_to(form)
        raise NotSent(
            f"{given[:100]!r} is outside the session's folder and its home; expected a file "
            "in one of them"
        )
    return folder, path


def read_bounded(root: Path, relative: PurePosixPath, limit: int) -> bytes:
    """At most ``limit`` bytes of the file, through the untrusted-file reader; NotSent for
    a link, a folder left, a missing file, an empty one or one over the bound."""
    shown = str(relative)[:100]
    try:
        data = untrusted.read(root, relative, limit + 1, whole=False)
    except FileNotFoundError:
        raise NotSent(f"{shown!r}: no such file") from None
    except untrusted.FileRefused as exc:
        raise NotSent(f"{shown!r} refused ({exc}); links are not followed") from None
    except OSError as exc:
        raise NotSent(f"{shown!r} cannot be read ({exc.strerror})") from None
    if len(data) > limit:
        raise NotSent(f"{shown!r} is over {limit} bytes, the most this channel sends")
    if not data:
        raise NotSent(f"{shown!r} is empty")
    return data
