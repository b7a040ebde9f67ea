"""Which channels a process runs, and for whom: each butler's own, and the switchboard's.

A butler's ``[butler.channels.*]`` tables are bound to it. The roster's
``switchboard.toml`` adds one set of channels that route among every butler
of this process; they live with its home butler (its database, its
credentials), and run only while the home butler does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from butler.channels.base import Channel, ChannelState, Misconfigured, Need
from butler.channels.inbox import Inbox
from butler.channels.live import LiveChannel
from butler.channels.service import ChannelService, Resolve
from butler.channels.switchboard import Router, Target
from butler.config import ButlerConfig
from butler.config.channels import ChannelSettings
from butler.config.switchboard import SwitchboardSection, load_switchboard
from butler.spawner.spawner import Spawner
from butler.store.channel_senders import SenderStore
from butler.store.conversations import ConversationStore
from butler.store.db import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Host:
    """A running butler, as channels see it."""

    config: ButlerConfig
    db: Database
    spawner: Spawner

    @property
    def name(self) -> str:
        return self.config.name

    def target(self) -> Target:
        return Target(self.name, self.config.butler.description, self.spawner)


def switchboard_of(
    configs: Sequence[ButlerConfig], roster_names: Sequence[str]
) -> SwitchboardSection | None:
    """The roster's switchboard when its home butler is among ``configs``; checked in full."""
    if not configs:
        return None
    section = load_switchboard(configs[0].roster_dir, roster_names)
    if section is None:
        return None
    homes = [c for c in configs if c.name == section.home]
    if not homes:
        log.info(
            "the switchboard's home butler is not started here; its channels stay off",
            extra={"home": section.home},
        )
        return None
    section.check_home(homes[0])
    return section


def new_channel(kind: str, settings: ChannelSettings, need: Need) -> Channel:
    """The channel of ``kind``; its library is imported only when a butler uses it.

    ``need`` resolves the further credentials a channel logs in with (Slack's app token).
    """
    if kind == "telegram":
        from butler.channels.telegram import TelegramChannel

        return TelegramChannel(settings)  # type: ignore[arg-type]
    if kind == "matrix":
        from butler.channels.matrix import MatrixChannel

        return MatrixChannel(settings)  # type: ignore[arg-type]
    if kind == "slack":
        from butler.channels.slack import SlackChannel

        return SlackChannel(settings, need)  # type: ignore[arg-type]
    if kind == "discord":
        from butler.channels.discord import DiscordChannel

        return DiscordChannel(settings)  # type: ignore[arg-type]
    from butler.channels.mail import EmailChannel

    return EmailChannel(settings)  # type: ignore[arg-type]


def needing(resolve: Resolve, hint: str) -> Need:
    """A credential's value by name, or Misconfigured naming the command that sets it."""

    async def need(name: str) -> str:
        value = await resolve(name)
        if not value:
            raise Misconfigured(
                f"credential {name} is not set; expected it in the credentials store "
                f"({hint.format(name=name)})"
            )
        return value

    return need


def build_services(
    hosts: Sequence[Host], switchboard: SwitchboardSection | None
) -> dict[str, ChannelService]:
    """A service per butler that has channels (its own, or the switchboard's), by name."""
    targets = {host.name: host.target() for host in hosts}
    services: dict[str, ChannelService] = {}
    for host in hosts:
        conversations = ConversationStore(host.db)
        bound = Router({host.name: targets[host.name]}, host.name, bound=True)
        plan = [
            (kind, s, bound, False) for kind, s in host.config.butler.channels.enabled().items()
        ]
        if switchboard is not None and switchboard.home == host.name:
            router = Router(
                targets,
                host.name,
                bound=False,
                rules=switchboard.rules,
                classifier_model=switchboard.classifier_model,
                classifier_timeout_s=switchboard.classifier_timeout_s,
            )
            plan += [(kind, s, router, True) for kind, s in switchboard.channels.enabled().items()]
        if not plan:
            continue
        hint = f"butler credentials set {{name}} -c {host.config.config_dir}"
        resolve = host.spawner.credentials.resolve
        need = needing(resolve, hint)
        links = [
            LiveChannel(
                new_channel(kind, s, need),
                ChannelState(kind, host.name, via),
                r,
                conversations,
                host.config.mcp_base_url,
                need,
            )
            for kind, s, r, via in plan
        ]
        secrets = {kind: s.credential for kind, s, _, _ in plan}
        inbox = Inbox(SenderStore(host.db), conversations)
        services[host.name] = ChannelService(links, inbox, conversations, resolve, secrets, hint)
    return services
