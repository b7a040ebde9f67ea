"""``[butler.sandbox]``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from butler.config.section import HOST_PATTERN, Section


class SandboxConfig(Section):
    """``[butler.sandbox]``: the jail every runtime process runs in.

    ``auto`` jails runtimes when bubblewrap can start here and warns once when it
    cannot; ``bwrap`` refuses to start without it; ``none`` runs them unjailed.
    """

    mode: Literal["auto", "bwrap", "none"] = "auto"
    allow_hosts: list[str] = Field(default_factory=list, max_length=100)
    read_only: list[str] = Field(default_factory=list, max_length=100)
    #: Processes one session's jail may hold; past it the session ends (sandbox/bridge_bounds.c).
    max_processes: int = Field(default=512, ge=8, le=100_000)
    #: Memory one session's jail may hold resident, in MiB, and each process may allocate.
    max_memory_mb: int = Field(default=2048, ge=64, le=1_048_576)

    @field_validator("allow_hosts")
    @classmethod
    def _hosts(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if not HOST_PATTERN.match(host):
                raise ValueError(f"expected a host name or host:port, found {host!r}")
        return hosts

    @field_validator("read_only")
    @classmethod
    def _paths(cls, paths: list[str]) -> list[str]:
        for path in paths:
            if not path.startswith("/"):
                raise ValueError(f"expected an absolute path, found {path!r}")
        return paths
