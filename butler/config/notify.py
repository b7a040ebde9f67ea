"""``[butler.notify]``: the owner's channels, and how the butler may use them.

A channel is a name the owner chose (``phone``, ``mail``) for one Apprise URL
or a list of them. Secrets are never written in the URL: each is a
``{NAME}`` placeholder filled at delivery time from the credentials store
(``butler credentials set NAME``); which parts of a URL are secret, Apprise's
own schema of the service says (:mod:`butler.config.notify_secrets`). A
session picks channels by name only.

A roster may hold defaults every butler shares in ``shared/notify.toml``
(a ``[notify]`` table with the same keys); a butler's own keys win, and its
channels are added to (or replace by name) the roster's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from butler.config.errors import describe
from butler.config.notify_secrets import PLACEHOLDER, UnknownService, literal_secret
from butler.config.section import NAME_PATTERN, Section, time_zone_name
from butler.errors import ConfigError
from butler.tomlfile import read_toml

#: Where a roster keeps the notify defaults of all its butlers.
ROSTER_FILE = Path("shared") / "notify.toml"
QUIET_PATTERN = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]):([0-5][0-9])$")

Delivery = Literal["always", "on-failure", "never"]


def check_url(url: str) -> str:
    """``url`` if it can be a channel's Apprise URL; ValueError saying why not."""
    shown = url[:80]
    if not re.match(r"^[a-z][a-z0-9+.-]{0,31}://", url):
        raise ValueError(
            f"expected an Apprise URL like 'tgram://{{TOKEN}}/{{CHAT}}', found {shown!r}"
        )
    if any(ch.isspace() or ord(ch) < 32 for ch in url) or "," in url:
        raise ValueError(f"expected one URL without spaces or commas, found {shown!r}")
    unclosed = PLACEHOLDER.sub("", url)
    if "{" in unclosed or "}" in unclosed:
        raise ValueError(
            f"expected placeholders like {{TELEGRAM_BOT_TOKEN}} (a credential's name), "
            f"found {shown!r}"
        )
    try:
        secret = literal_secret(url)
    except UnknownService as exc:
        raise ValueError(f"{exc}; found {shown!r}") from None
    if secret:
        raise ValueError(
            f"found {secret.what} written in the URL; expected a placeholder such as "
            f"{{{secret.name}}} whose value you store with: butler credentials set {secret.name}"
        )
    return url


class NotifyConfig(Section):
    """``[butler.notify]``: named channels and the limits on reaching the person."""

    #: Channel name -> an Apprise URL (or several) with ``{SECRET}`` placeholders.
    channels: dict[str, str | list[str]] = Field(default_factory=dict, max_length=32)
    #: The channels a message that names none goes to; every channel when empty.
    default: list[str] = Field(default_factory=list, max_length=32)
    #: What a schedule sends when its session ends, unless the schedule says otherwise.
    schedules: Delivery = "always"
    #: Hours ("22:00-07:00") when only high-priority messages go out; the rest wait.
    quiet: str | None = None
    #: The time zone ``quiet`` is read in.
    timezone: str = "UTC"
    max_per_session: int = Field(default=5, ge=1, le=1000)
    max_per_hour: int = Field(default=30, ge=1, le=100_000)
    #: Longest message body sent; a longer one is cut, with a link to the session.
    max_chars: int = Field(default=4000, ge=200, le=1_000_000)
    max_attachment_bytes: int = Field(default=5 * 1024 * 1024, ge=1, le=100 * 1024 * 1024)
    #: Attempts after the first one failed; each waits four times longer than the last.
    retries: int = Field(default=3, ge=0, le=10)
    retry_after_s: float = Field(default=30.0, gt=0, le=3600, allow_inf_nan=False)

    @field_validator("default", mode="before")
    @classmethod
    def _one_default(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("channels")
    @classmethod
    def _channels(cls, channels: dict[str, str | list[str]]) -> dict[str, str | list[str]]:
        for name, urls in channels.items():
            if not NAME_PATTERN.match(name):
                raise ValueError(
                    f"expected a short lower-case channel name like 'phone', found {name!r}"
                )
            listed = [urls] if isinstance(urls, str) else urls
            if not listed or len(listed) > 16:
                raise ValueError(f"channel {name!r}: expected 1 to 16 URLs, found {len(listed)}")
            for url in listed:
                try:
                    check_url(url)
                except ValueError as exc:
                    raise ValueError(f"channel {name!r}: {exc}") from None
        return channels

    @field_validator("quiet")
    @classmethod
    def _quiet(cls, value: str | None) -> str | None:
        match = QUIET_PATTERN.match(value) if value is not None else None
        if value is not None and (match is None or match.group(1, 2) == match.group(3, 4)):
            raise ValueError(
                f"expected hours like '22:00-07:00' (start and end apart), found {value!r}"
            )
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        return time_zone_name(value)

    @model_validator(mode="after")
    def _default_channels_exist(self) -> NotifyConfig:
        self.unknown(self.default, "default")
        return self

    def urls(self, channel: str) -> list[str]:
        """The URL templates of ``channel`` (a configured name)."""
        urls = self.channels[channel]
        return [urls] if isinstance(urls, str) else list(urls)

    def unknown(self, names: list[str], key: str) -> None:
        """ValueError naming the first of ``names`` that is no channel of this table."""
        for name in names:
            if name not in self.channels:
                known = ", ".join(sorted(self.channels)) or "none configured"
                raise ValueError(
                    f"{key}: found {name!r}, which is no channel; the channels are: {known}"
                )


def with_roster_defaults(table: dict[str, Any], roster_dir: Path) -> dict[str, Any]:
    """``table`` (a ``[butler]`` table) over the roster's ``shared/notify.toml``.

    The roster's file is checked on its own first, so a mistake in it is
    blamed on it, not on the butler that reads it.
    """
    path = roster_dir / ROSTER_FILE
    if not path.is_file():
        return table
    data = read_toml(path)
    unknown = sorted(set(data) - {"notify"})
    if unknown:
        raise ConfigError(f"{path}: unknown table '{unknown[0]}'; expected only [notify]")
    shared = data.get("notify", {})
    try:
        NotifyConfig.model_validate(shared, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(["notify", *(str(part) for part in first["loc"])])
        raise ConfigError(f"{path}: {where}: {describe(first, NotifyConfig)}") from None
    own = table.get("notify", {})
    if not isinstance(own, dict):
        return table  # the butler's own validation names the key that is no table
    merged = {**shared, **own}
    if isinstance(own.get("channels", {}), dict):
        merged["channels"] = {**shared.get("channels", {}), **own.get("channels", {})}
    return {**table, "notify": merged}
