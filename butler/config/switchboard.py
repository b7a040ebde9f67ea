"""``roster/switchboard.toml``: one bot for the whole roster, and how it picks a butler.

    [switchboard]
    home = "general"              # keeps its pairings, credentials, classification sessions
    classifier_model = "claude-haiku-4-5"

    [switchboard.channels.telegram]
    token_credential = "TELEGRAM_BOT_TOKEN"

    [[switchboard.rules]]
    butler = "health"
    keywords = ["medication", "blood pressure"]
    patterns = ['(?i)\\bdue today\\b']

A message naming a butler (``/health ...``, ``@health ...``) goes there; else
the first rule that matches; else a short classification session picks one
from the butlers' descriptions, or the person is asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pydantic import Field, PrivateAttr, ValidationError, field_validator

from butler.config.channel_tables import ChannelTables
from butler.config.errors import validation_error_line
from butler.config.model import ButlerConfig
from butler.config.section import NAME_PATTERN, Section
from butler.errors import ConfigError
from butler.tomlfile import read_toml

SWITCHBOARD_FILE = "switchboard.toml"


class Rule(Section):
    """One ``[[switchboard.rules]]`` entry: words or patterns that send a message to a butler."""

    butler: str
    #: Whole words matched case-insensitively.
    keywords: list[str] = Field(default_factory=list, max_length=200)
    #: Regular expressions (Python syntax), searched in the message's first characters.
    patterns: list[str] = Field(default_factory=list, max_length=50)

    @field_validator("keywords")
    @classmethod
    def _keywords(cls, values: list[str]) -> list[str]:
        for value in values:
            if not value.strip() or len(value) > 100:
                raise ValueError(f"expected words of 1 to 100 characters, found {value[:40]!r}")
        return values

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(
                    f"pattern {value[:60]!r} is no regular expression: {exc}"
                ) from None
        return values


class SwitchboardSection(Section):
    """The ``[switchboard]`` table."""

    #: The butler whose database keeps the switchboard's pairings and conversations,
    #: whose credentials hold its secrets, and which runs its classification sessions.
    home: str
    #: The model of the classification session; the home butler's own when unset.
    classifier_model: str | None = Field(default=None, max_length=200)
    classifier_timeout_s: float = Field(default=60.0, gt=0, le=600, allow_inf_nan=False)
    channels: ChannelTables = Field(default_factory=ChannelTables)
    rules: list[Rule] = Field(default_factory=list, max_length=500)

    #: The file it was read from (for error lines).
    _path: Path = PrivateAttr(default=Path(SWITCHBOARD_FILE))

    @field_validator("home")
    @classmethod
    def _home(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise ValueError(f"expected a butler's name, found {value!r}")
        return value

    def check_home(self, home: ButlerConfig) -> None:
        """The home butler may not have a channel of a kind the switchboard has: both would
        keep their pairings and conversations under the same name in its database."""
        own = home.butler.channels.enabled()
        for kind in self.channels.enabled():
            if kind in own:
                raise ConfigError(
                    f"{self._path}: switchboard.channels.{kind}: the home butler {self.home} "
                    f"has a {kind} channel of its own; expected one {kind} channel per "
                    f"database (remove [butler.channels.{kind}] from {home.config_dir}/butler.toml)"
                )


def load_switchboard(roster_dir: Path, butlers: Sequence[str]) -> SwitchboardSection | None:
    """The roster's switchboard, or None when it has no ``switchboard.toml``.

    ``butlers`` are the roster's butler names: the home and every rule must name one.
    """
    path = roster_dir / SWITCHBOARD_FILE
    if not path.is_file():
        return None
    data = read_toml(path)
    unknown = sorted(set(data) - {"switchboard"})
    if unknown:
        raise ConfigError(f"{path}: unknown table '{unknown[0]}'; expected only [switchboard]")
    table = data.get("switchboard")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: missing [switchboard] table; expected one with home = ...")
    if "home" not in table:
        raise ConfigError(
            f"{path}: [switchboard]: missing required key 'home' (the butler that keeps "
            "the switchboard's pairings and credentials)"
        )
    try:
        section = SwitchboardSection.model_validate(table, strict=True)
    except ValidationError as exc:
        message = validation_error_line(exc, path, {}, SwitchboardSection)
        message = message.replace(f"{path}: [butler", f"{path}: [switchboard", 1)
        raise ConfigError(message.replace(f"{path}: butler.", f"{path}: switchboard.", 1)) from None
    _check_names(path, section, butlers)
    section._path = path
    return section


def _check_names(path: Path, section: SwitchboardSection, butlers: Sequence[str]) -> None:
    known = ", ".join(butlers)
    named = [("home", section.home)]
    named += [(f"rules[{i}].butler", rule.butler) for i, rule in enumerate(section.rules)]
    for key, name in named:
        if name not in butlers:
            raise ConfigError(
                f"{path}: switchboard.{key}: no butler named {name!r} in the roster; "
                f"expected one of {known}"
            )
