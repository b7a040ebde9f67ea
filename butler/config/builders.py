"""``[butler.builders]``."""

from __future__ import annotations

from pydantic import Field, field_validator

from butler.config.section import Section
from butler.runtimes.settings import RuntimeConfig


class BuildersConfig(Section):
    """``[butler.builders]``: how many may run at once; runtimes to pick with ``--runtime``;
    the repositories a session may start builders in.

    ``repos`` is for sessions only (a runtime's ``builder_spawn``): a builder writes its
    repository's objects and refs, so a session reaches no other repository than these.
    Unset, it is the repository holding the butler folder when the daemon starts, if
    there is one (fixed then: a session writes its butler folder). The owner's own
    ``butler builders spawn`` may use any repository the owner can read.
    """

    max_running: int = Field(default=4, ge=1, le=64)
    runtimes: dict[str, RuntimeConfig] = Field(default_factory=dict, max_length=32)
    repos: list[str] | None = Field(default=None, max_length=100)

    @field_validator("repos")
    @classmethod
    def _absolute(cls, paths: list[str] | None) -> list[str] | None:
        for path in paths or ():
            if not path.startswith("/"):
                raise ValueError(f"expected an absolute path, found {path!r}")
        return paths
