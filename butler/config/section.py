"""What every ``butler.toml`` table is built on, and the patterns names are checked with."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
SCHEMA_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HOST_PATTERN = re.compile(r"^([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]{2,39}\])(:[0-9]{1,5})?$")


class Section(BaseModel):
    """A table of ``butler.toml``: unknown keys refused, values frozen once loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def time_zone_name(value: str) -> str:
    """``value`` when it is an IANA time zone this machine knows; a ValueError that says so."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # its database loads on first use

    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"expected an IANA time zone like 'Europe/Paris', found {value!r}"
        ) from None
    return value
