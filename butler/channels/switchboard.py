"""Which butler answers a message: the one bound, the one named, the conversation's, a rule's,
or a short classification session's choice.

The classification session is an ordinary session of the home butler (source
``route``, type ``classify``): jailed, bounded in turns and time, on its own
cheap model when one is set. Its answer is data: only an exact butler name
counts, anything else means asking the person.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from butler.channels.message import Inbound
from butler.channels.routing import classifier_prompt, mention, parse_choice, rule_for
from butler.config.switchboard import Rule
from butler.spawner.request import TriggerRequest
from butler.spawner.spawner import Spawner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """A butler a channel may hand a message to."""

    name: str
    description: str
    spawner: Spawner


@dataclass(frozen=True)
class Route:
    """Where a message goes (None: ask the person), what of it is sent, and why."""

    butler: str | None
    text: str
    #: bound, mention, conversation, rule, classifier or unsure.
    how: str


class Router:
    """Picks the butler of each message, for one service's channels."""

    def __init__(
        self,
        targets: Mapping[str, Target],
        home: str,
        *,
        bound: bool,
        rules: Sequence[Rule] = (),
        classifier_model: str | None = None,
        classifier_timeout_s: float = 60.0,
    ) -> None:
        self.targets = dict(targets)
        self.home = home
        self.bound = bound
        self.rules = list(rules)
        self.classifier_model = classifier_model
        self.classifier_timeout_s = classifier_timeout_s

    @property
    def names(self) -> list[str]:
        return list(self.targets)

    async def route(self, message: Inbound, text: str, current: str | None) -> Route:
        """The butler for ``text`` (the message without any ``/new``)."""
        if self.bound:
            _, rest = mention(text, [self.home])
            return Route(self.home, rest, "bound")
        named, rest = mention(text, self.names)
        if named:
            return Route(named, rest, "mention")
        if current in self.targets:
            return Route(current, text, "conversation")
        ruled = rule_for(text, [r for r in self.rules if r.butler in self.targets])
        if ruled:
            return Route(ruled, text, "rule")
        if len(self.targets) == 1:
            return Route(self.names[0], text, "only")
        chosen = await self.classify(message, text)
        return Route(chosen, text, "classifier" if chosen else "unsure")

    async def classify(self, message: Inbound, text: str) -> str | None:
        """Ask a short session of the home butler to pick among the butlers' descriptions."""
        butlers = {name: t.description for name, t in self.targets.items()}
        request = TriggerRequest(
            prompt=classifier_prompt(text, butlers),
            trigger_source="route",
            session_type="classify",
            max_turns=1,
            timeout_s=self.classifier_timeout_s,
            model=self.classifier_model,
            metadata={
                "channel": message.channel,
                "sender": message.sender,
                "thread": message.thread or message.chat,
            },
        )
        result = await self.targets[self.home].spawner.trigger(request)
        if not result.success:
            log.warning(
                "classification session failed; asking the person",
                extra={"channel": message.channel, "session_id": result.session_id},
            )
            return None
        return parse_choice(result.output, self.names)
