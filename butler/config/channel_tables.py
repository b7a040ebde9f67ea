"""``[butler.channels]`` as a whole: the channel tables, and what a sender's sessions see.

The tables themselves (one per kind of channel) are :mod:`.channels`';
``[switchboard.channels]`` is just those, while a butler's own
``[butler.channels]`` also says how much of the butler a session started by
a chat message may see (docs/security.md, "What a sender's session can see").
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from butler.config.channels import (
    CHANNEL_KINDS,
    ChannelSettings,
    DiscordSettings,
    EmailSettings,
    MatrixSettings,
    SlackSettings,
    TelegramSettings,
)
from butler.config.section import ENV_NAME_PATTERN, Section


class ChannelTables(Section):
    """One optional table per kind of channel (``[switchboard.channels]`` is just these)."""

    telegram: TelegramSettings | None = None
    matrix: MatrixSettings | None = None
    email: EmailSettings | None = None
    slack: SlackSettings | None = None
    discord: DiscordSettings | None = None

    def enabled(self) -> dict[str, ChannelSettings]:
        """The channels switched on, by kind."""
        found = {kind: getattr(self, kind) for kind in CHANNEL_KINDS}
        return {kind: table for kind, table in found.items() if table and table.enabled}


#: What a session started by a chat message may see of the butler's sessions, state and
#: memory: its own conversation's, everything of its sender's, or the whole butler's.
SenderScope = Literal["conversation", "sender", "butler"]


class ChannelsConfig(ChannelTables):
    """``[butler.channels]``: the butler's own channels, and what their sessions may see.

    ``sender_scope`` is this butler's, whichever channel (its own or the
    switchboard's) brought the message: the sessions run here.
    """

    sender_scope: SenderScope = "conversation"
    #: The declared variables (``[butler.env]``, modules' credentials) a sender's session
    #: gets besides the model's keys; none by default: they are the owner's.
    sender_env: list[str] = Field(default_factory=list, max_length=100)

    @field_validator("sender_env")
    @classmethod
    def _sender_env(cls, names: list[str]) -> list[str]:
        for name in names:
            if not ENV_NAME_PATTERN.match(name):
                raise ValueError(f"expected an environment variable name, found {name!r}")
        return names
