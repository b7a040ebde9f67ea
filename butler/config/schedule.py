"""``[[butler.schedule]]``."""

from __future__ import annotations

from croniter import croniter
from pydantic import Field, field_validator

from butler.config.notify import Delivery
from butler.config.section import NAME_PATTERN, Section, time_zone_name


class ScheduleConfig(Section):
    """One ``[[butler.schedule]]`` entry: a prompt fired on a cron expression."""

    name: str
    cron: str
    prompt: str
    timezone: str = "UTC"
    #: Whether the session's answer is sent when it ends; ``[butler.notify] schedules`` if unset.
    notify: Delivery | None = None
    #: The channels it goes to (one name or several); the butler's default channels if unset.
    notify_channel: str | list[str] | None = Field(default=None)

    def channels(self) -> list[str] | None:
        """``notify_channel`` as a list, or None to use the butler's default channels."""
        if isinstance(self.notify_channel, str):
            return [self.notify_channel]
        return self.notify_channel

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise ValueError(f"expected a short lower-case name, found {value!r}")
        return value

    @field_validator("prompt")
    @classmethod
    def _prompt(cls, value: str) -> str:
        if not value.strip() or "\x00" in value:
            raise ValueError(f"expected a non-blank prompt without NUL, found {value[:40]!r}")
        return value

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        if not croniter.is_valid(value):
            raise ValueError(f"expected a cron expression like '0 8 * * *', found {value!r}")
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        return time_zone_name(value)
