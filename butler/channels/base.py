"""The contract every channel keeps, and the state it shows in ``status()``.

A channel only speaks its app's protocol: connect, read a batch of messages
from a cursor, send a text (or a file) to where a message came from, show that an answer
is being written, fetch an attachment within a byte limit. Pairing, routing,
threads and retries are the inbox's and the service's, the same for all.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.config.channels import ChannelSettings
from butler.errors import ButlerError

#: Resolves a credential's value by name; :class:`Misconfigured` when it is not set.
Need = Callable[[str], Awaitable[str]]
#: Whether a sender (the channel's own id of them) is paired on the channel.
Paired = Callable[[str], Awaitable[bool]]


async def nobody(sender: str) -> bool:
    """No sender is paired: a channel's view until its service tells it otherwise."""
    return False


class ChannelError(ButlerError):
    """A channel's server refused or could not be reached; the service retries."""


class Misconfigured(ChannelError):
    """The channel's server refused who the daemon says it is: a person must fix a setting."""


class Paced(ChannelError):
    """The chat server asked the daemon to wait before sending again (Telegram's 429)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TooLarge(ChannelError):
    """An attachment was larger than the channel's limit."""


class NotSendable(ChannelError):
    """What no retry will send: the channel cannot send files, or the platform refused
    this one for good (too large, a type it does not take); the session is told why."""


@dataclass
class ChannelState:
    """How one channel is doing, for ``status()``, ``/api/status`` and ``butler list``."""

    kind: str
    #: The butler whose database keeps it (the switchboard's home, or its own butler).
    butler: str
    switchboard: bool
    status: str = "starting"
    since: float = field(default_factory=time.time)
    error: str | None = None
    reconnects: int = 0
    last_message_at: float | None = None

    def moved(self, status: str, error: str | None = None) -> None:
        if status != self.status:
            self.since = time.time()
        if status == "retrying" and self.status != "retrying":
            self.reconnects += 1
        self.status, self.error = status, error

    def as_json(self) -> dict[str, Any]:
        return {
            "channel": self.kind,
            "butler": self.butler,
            "switchboard": self.switchboard,
            "status": self.status,
            "since": round(self.since, 3),
            "error": self.error,
            "reconnects": self.reconnects,
            "last_message_at": self.last_message_at,
        }


class Channel(ABC):
    """One chat app's connection: read, answer, show typing, fetch attachments."""

    kind: ClassVar[str]
    #: Whether it shows "typing..." (email has no such thing).
    shows_typing: ClassVar[bool] = True
    #: Whether an unknown sender gets the one short refusal (email would send backscatter).
    refuses_strangers: ClassVar[bool] = True
    #: Whether, in a group, a sender's message in the thread of their open conversation
    #: is for the bot without naming it (Slack, where each conversation is a thread the
    #: app answers in); elsewhere only a mention, a reply or a command is.
    follows_threads: ClassVar[bool] = False
    #: The largest file the platform takes from a bot (the channel's own bound, its
    #: ``max_attachment_bytes``, is applied too).
    max_file_bytes: ClassVar[int] = 10 * 1024 * 1024

    def __init__(self, settings: ChannelSettings) -> None:
        self.settings = settings
        #: What :meth:`redact` takes out of error lines: the secrets it logged in with.
        self.secrets: set[str] = set()
        #: Whether a sender is paired, for a channel that lets paired people in before
        #: they write (Matrix's invites); the service sets it from the pairing store.
        self.paired: Paired = nobody

    @property
    @abstractmethod
    def max_reply_chars(self) -> int:
        """The longest text one message may carry; longer replies are split."""

    @abstractmethod
    async def connect(self, secret: str, position: str | None) -> str | None:
        """Log in with ``secret`` and resume reading at ``position``.

        Returns the position to store when the channel starts somewhere of its
        own choosing (a first start skips what came before), else None.
        """

    @abstractmethod
    async def receive(self) -> Batch:
        """Wait for the next messages (long polling, IDLE, sync); raise ChannelError."""

    @abstractmethod
    async def send(self, to: Inbound, text: str) -> str:
        """Send ``text`` where ``to`` came from; the id of the message sent."""

    async def send_file(
        self, to: Inbound, name: str, media_type: str, data: bytes, caption: str = ""
    ) -> str:
        """Send a file where ``to`` came from: an image as a picture where the platform
        shows them, anything else as a document; the id of the message sent."""
        raise NotSendable(f"{self.kind}: this channel cannot send files")

    def measure(self, text: str) -> int:
        """How long ``text`` is by the channel's count (characters, unless it counts otherwise)."""
        return len(text)

    async def typing(self, to: Inbound) -> None:  # noqa: B027 - most channels have one
        """Show, for a few seconds, that an answer is being written."""

    async def leave(self, chat: str) -> bool:
        """Leave the group or room ``chat`` (one not on the channel's allow-list); whether
        the channel can (a Slack or Discord bot stays, and hears nothing there)."""
        return False

    @abstractmethod
    async def fetch(self, attachment: AttachmentRef, limit: int) -> bytes:
        """The attachment's bytes; :class:`TooLarge` past ``limit``."""

    @abstractmethod
    async def close(self) -> None:
        """Drop the connection; the channel may connect again afterwards."""

    def redact(self, text: str) -> str:
        """``text`` (an error line) without any secret this channel holds."""
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, "***")
        return text
