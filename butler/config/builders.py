"""``[butler.builders]``."""

from __future__ import annotations

from pydantic import Field

from butler.config.section import Section
from butler.runtimes.settings import RuntimeConfig


class BuildersConfig(Section):
    """``[butler.builders]``: how many may run at once; runtimes to pick with ``--runtime``."""

    max_running: int = Field(default=4, ge=1, le=64)
    runtimes: dict[str, RuntimeConfig] = Field(default_factory=dict, max_length=32)
