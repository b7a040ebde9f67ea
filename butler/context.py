"""The running butler, assembled: what its tools, pages and terminals call into."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from butler.builders.manager import BuilderManager
from butler.config import ButlerConfig
from butler.notify import Notifier
from butler.spawner.spawner import Spawner
from butler.store.db import Database
from butler.store.deliveries import DeliveryStore
from butler.store.sessions import SessionStore
from butler.store.state import StateStore

if TYPE_CHECKING:
    from butler.channels.service import ChannelService
    from butler.channels.web import WebChat
    from butler.scheduler import Scheduler


@dataclass
class ButlerContext:
    """Everything the tools of one butler call into."""

    config: ButlerConfig
    db: Database
    state: StateStore
    sessions: SessionStore
    spawner: Spawner
    started_at: float = field(default_factory=time.time)
    scheduler: Scheduler | None = None
    #: Every butler served by the same process (``butler up``), this one included.
    peers: list[ButlerContext] = field(default_factory=list)
    #: The butler's one builder manager; built from the spawner when not given.
    builders: BuilderManager = None  # type: ignore[assignment]
    #: How the butler reaches its person; built over its database when not given.
    notifier: Notifier = None  # type: ignore[assignment]
    #: The chat channels this butler keeps (its own and, as home, the switchboard's).
    channels: ChannelService | None = None
    _web_chat: WebChat | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.builders is None:
            self.builders = BuilderManager(self.config, self.spawner, self.sessions)
        if self.notifier is None:
            self.notifier = Notifier(self.config, DeliveryStore(self.db), self.spawner.credentials)

    @property
    def web_chat(self) -> WebChat:
        """The owner's web chat with this butler (``/chat/``), built at its first use: the
        chat's first page, or a tool handing its person a file (``send_file``)."""
        if self._web_chat is None:
            from butler.channels.web import WebChat
            from butler.store.conversations import ConversationStore

            description = self.config.butler.description or ""
            conversations = ConversationStore(self.db)
            self._web_chat = WebChat(
                self.config.name, description, self.spawner, conversations, self.sessions
            )
        return self._web_chat
