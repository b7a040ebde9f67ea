"""The owner's channels by name: which a message goes to, and their URLs filled in.

A session names a channel; it never gives a URL, an address or a chat id.
A channel's URL is filled from the credentials store only when a message is
sent, is never logged or stored, and every text that comes back from a
service (its error line) has the secrets taken out again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote

from butler.config.notify import PLACEHOLDER, NotifyConfig
from butler.config.section import NAME_PATTERN
from butler.errors import UserError
from butler.store.credentials import CredentialStore

#: Shorter values are left in error lines: replacing "1" everywhere would say nothing.
MIN_REDACTED = 4


class NotifyRefused(UserError):
    """A message that cannot be sent as asked: no such channel, a limit, a bad attachment."""


class ChannelUnavailable(UserError):
    """A channel that cannot be used now (a credential is missing, it was removed)."""


@dataclass(frozen=True)
class FilledChannel:
    """A channel's URLs with their secrets filled in: held in memory for one attempt."""

    name: str
    urls: list[str] = field(repr=False)
    secrets: dict[str, str] = field(repr=False)

    def redact(self, text: str | None) -> str | None:
        """``text`` with every secret of this channel shown as its ``{NAME}`` again."""
        if text is None:
            return None
        for name, value in sorted(self.secrets.items(), key=lambda kv: -len(kv[1])):
            if len(value) < MIN_REDACTED:
                continue
            for form in {value, quote(value, safe=""), quote(value)}:
                text = text.replace(form, f"{{{name}}}")
        return text


def known(config: NotifyConfig) -> str:
    return ", ".join(sorted(config.channels)) or "none"


def chosen(config: NotifyConfig, requested: str | list[str] | None) -> list[str]:
    """The channels a message goes to: those named, or the default ones.

    A name is looked up among the owner's channels and nothing else: a URL,
    an address or a chat id is refused before it is looked at.
    """
    if not config.channels:
        raise NotifyRefused(
            "this butler has no channel to reach its person; the owner names them "
            "under [butler.notify.channels] in butler.toml (see docs/notify.md)"
        )
    if requested is None:
        return list(config.default) or sorted(config.channels)
    names = [requested] if isinstance(requested, str) else requested
    for name in names:
        if not NAME_PATTERN.match(name):
            raise NotifyRefused(
                f"channel: expected the name of one of the owner's channels ({known(config)}); "
                "a URL, an address or a chat id is never accepted"
            )
        if name not in config.channels:
            raise NotifyRefused(
                f"channel: no channel named {name!r}; the owner's channels are: {known(config)}"
            )
    return list(dict.fromkeys(names))


async def fill(config: NotifyConfig, name: str, credentials: CredentialStore) -> FilledChannel:
    """``name``'s URLs with each ``{NAME}`` replaced by its credential, percent-encoded.

    Encoded, a value stays one part of the URL: a ``/`` or ``@`` in a token
    cannot move the message to another host or path.
    """
    if name not in config.channels:
        raise ChannelUnavailable(f"channel {name!r} is no longer configured")
    templates = config.urls(name)
    wanted = sorted({m for url in templates for m in PLACEHOLDER.findall(url)})
    values = await credentials.resolve_many(wanted)
    missing = [n for n in wanted if n not in values]
    if missing:
        raise ChannelUnavailable(
            f"channel {name!r}: no credential {missing[0]}; store it with: "
            f"butler credentials set {missing[0]} --config <butler folder>"
        )
    urls = [PLACEHOLDER.sub(lambda m: quote(values[m[1]], safe=""), url) for url in templates]
    return FilledChannel(name, urls, {n: values[n] for n in wanted})
