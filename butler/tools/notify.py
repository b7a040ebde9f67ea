"""The ``notify`` tool: a session reaches the butler's person, and the daemon sends it.

What a chat sender's session sends says so (:func:`_sender`): the owner's channel shows
whose session wrote it. Nor does it page the owner: ``high`` (which goes out even in
quiet hours) is sent as ``normal`` for it, and the answer says so."""

# No postponed annotations: FastMCP reads the argument types (and their bounds) at runtime.
import asyncio
from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import AfterValidator, Field

from butler.context import ButlerContext
from butler.notify import Message, NotifyRefused
from butler.notify.attachment import MAX_PATH_CHARS, read_attachment
from butler.security.caller import current_caller
from butler.tools.tenancy import current_tenant

#: Longest title a caller may give (it is cut to one short line anyway).
MAX_TITLE_CHARS = 1000
#: Longest message a caller may give; what is sent is cut to ``max_chars``.
MAX_MESSAGE_CHARS = 1024 * 1024


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("expected a message to send, found only blanks")
    return value


MessageText = Annotated[
    str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS), AfterValidator(_not_blank)
]
Title = Annotated[str | None, Field(max_length=MAX_TITLE_CHARS)]
ChannelName = Annotated[str | None, Field(min_length=1, max_length=100)]
AttachPath = Annotated[str | None, Field(min_length=1, max_length=MAX_PATH_CHARS)]


def register_notify_tools(mcp: FastMCP, butler: ButlerContext) -> None:
    """Add ``notify`` to ``mcp``."""
    settings = butler.config.butler.notify

    @mcp.tool
    async def notify(
        message: MessageText,
        title: Title = None,
        priority: Literal["normal", "high", "low"] = "normal",
        channel: ChannelName = None,
        attach: AttachPath = None,
    ) -> dict[str, Any]:
        """Send ``message`` to the butler's person through one of the owner's channels.

        ``channel`` is the name of a channel the owner configured (the default
        ones when omitted); never a URL, an address or a chat id. ``attach``
        is a file in the butler's folder. ``high`` goes out even in quiet
        hours; other messages wait for them to end. Long messages are cut.
        Returns, per channel, ``delivered``, ``held`` (until when) or
        ``pending`` (the first attempt failed; it is tried again).
        """
        session_id = current_caller().session_id
        try:
            attachment = None
            if attach is not None:
                attachment = await asyncio.to_thread(
                    read_attachment,
                    butler.config.config_dir,
                    attach,
                    settings.max_attachment_bytes,
                )
            sender = await _sender(butler)
            capped = sender is not None and priority == "high"
            if sender is not None:  # the owner reads whose words these are, not the butler's
                message = f"Sent by a session {sender} started; its words are theirs.\n\n{message}"
                title = f"[{sender}] {title or butler.config.name}"
            if capped:  # a sender does not wake the owner in quiet hours
                priority = "normal"
            sent = Message(
                body=message, title=title or "", priority=priority, attachment=attachment
            )
            reports = await butler.notifier.deliver(
                sent, channel, session_id=session_id, source="tool", wait=True
            )
        except NotifyRefused as exc:
            raise ToolError(f"notify: {exc}") from None
        if capped:
            return {
                "channels": reports,
                "priority": "normal: a chat sender's session sends none high",
            }
        return {"channels": reports}


async def _sender(butler: ButlerContext) -> str | None:
    """Who started the calling session's chain when a chat message did (``telegram sender
    6666``), else None: a sender's session writes what the owner's phone shows, and
    unmarked it would read as the butler's own word (or as another person's, relayed)."""
    tenant = current_tenant()
    if tenant is None or tenant.owner:
        return None
    row = await butler.sessions.get(str(tenant.root))
    meta = (row or {}).get("metadata") or {}
    channel, sender = meta.get("channel"), meta.get("sender")
    return f"{channel} sender {sender}" if channel and sender else "a chat sender"
