"""The ``[butler]`` table as a whole, and a loaded butler."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from butler.config.builders import BuildersConfig
from butler.config.channel_tables import ChannelsConfig
from butler.config.notify import NotifyConfig
from butler.config.sandbox import SandboxConfig
from butler.config.schedule import ScheduleConfig
from butler.config.section import NAME_PATTERN, Section
from butler.config.tables import DbConfig, EnvConfig, MemoryConfig, ModuleConfig, TelemetryConfig
from butler.essentials import Essentials
from butler.runtimes.settings import RuntimeConfig


class ButlerSection(Section):
    """The ``[butler]`` table."""

    name: str
    port: int = 8100
    description: str = ""
    host: str = "127.0.0.1"
    #: Host names (besides loopback and the bound address) a request may be addressed to.
    allowed_hosts: list[str] = Field(default_factory=list)
    #: Browser origins (besides the dashboard's own) a request may come from.
    allowed_origins: list[str] = Field(default_factory=list)
    #: Where the owner reaches the dashboard from elsewhere (links in notifications), and
    #: where runtimes on workers call their butler back.
    public_url: str | None = Field(default=None, max_length=2000)
    shutdown_timeout_s: float = Field(default=30.0, ge=0, allow_inf_nan=False)
    #: Longest output, error or prompt stored for one session; the rest is cut with a marker.
    max_output_bytes: int = Field(default=1024 * 1024, ge=1024, le=256 * 1024 * 1024)
    #: Longest prompt a caller may send, and longest system prompt its includes may expand to.
    max_prompt_bytes: int = Field(default=1024 * 1024, ge=1024, le=64 * 1024 * 1024)
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    builders: BuildersConfig = Field(default_factory=BuildersConfig)
    env: EnvConfig = Field(default_factory=EnvConfig)
    db: DbConfig = Field(default_factory=DbConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    modules: dict[str, ModuleConfig] = Field(default_factory=dict)
    #: Before ``schedule``: a schedule's channels are checked against it.
    notify: NotifyConfig = Field(default_factory=NotifyConfig)
    schedule: list[ScheduleConfig] = Field(default_factory=list)
    channels: ChannelsConfig = Field(default_factory=ChannelsConfig)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise ValueError(
                "expected a lower-case name of letters, digits, '-' or '_' "
                f"(at most 40, starting with a letter), found {value!r}"
            )
        return value

    @field_validator("schedule")
    @classmethod
    def _unique_schedules(cls, entries: list[ScheduleConfig]) -> list[ScheduleConfig]:
        seen: set[str] = set()
        for entry in entries:
            if entry.name in seen:
                raise ValueError(
                    f"two [[butler.schedule]] entries are named {entry.name!r}; "
                    "expected each schedule to have its own name"
                )
            seen.add(entry.name)
        return entries

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/?#\s]+(/[^?#\s]*)?$", value):
            raise ValueError(
                f"expected the dashboard's address like 'https://butler.example.net', "
                f"found {value[:80]!r}"
            )
        return value.rstrip("/") if value else value

    @field_validator("schedule")
    @classmethod
    def _schedule_channels_exist(
        cls, entries: list[ScheduleConfig], info: ValidationInfo
    ) -> list[ScheduleConfig]:
        notify = info.data.get("notify")
        for entry in entries if isinstance(notify, NotifyConfig) else []:
            notify.unknown(entry.channels() or [], f"schedule {entry.name!r}: notify_channel")
        return entries

    @field_validator("channels")
    @classmethod
    def _sender_env_declared(cls, channels: ChannelsConfig, info: ValidationInfo) -> ChannelsConfig:
        env, modules = info.data.get("env"), info.data.get("modules") or {}
        declared = set(env.required + env.optional) if isinstance(env, EnvConfig) else set()
        for module in modules.values():
            declared |= set(module.credentials)
        for name in channels.sender_env:
            if name not in declared:
                raise ValueError(
                    f"sender_env: {name!r} is no variable this butler declares; expected it "
                    "in [butler.env] required or optional, or a module's credentials"
                )
        return channels

    @field_validator("port")
    @classmethod
    def _port(cls, value: int) -> int:
        if not 1 <= value <= 65535:
            raise ValueError(f"expected a port number from 1 to 65535, found {value}")
        return value


class ButlerConfig(BaseModel):
    """A loaded butler: its ``[butler]`` table and where it came from."""

    model_config = ConfigDict(frozen=True)

    butler: ButlerSection
    config_dir: Path
    #: SHA-256 of the butler.toml it was loaded from (``config.watch`` compares it).
    source_digest: str | None = None

    @property
    def name(self) -> str:
        return self.butler.name

    @property
    def runtime(self) -> RuntimeConfig:
        return self.butler.runtime

    @property
    def roster_dir(self) -> Path:
        """The folder holding this butler's folder (and ``shared/``)."""
        return self.config_dir.parent

    @property
    def db_schema(self) -> str:
        return self.butler.db.schema_ or self.butler.name.replace("-", "_")

    def essentials(self) -> Essentials:
        """What commands read plainly of a folder (:mod:`butler.essentials`), from this load."""
        return Essentials(
            name=self.name,
            config_dir=self.config_dir,
            host=self.butler.host,
            port=self.butler.port,
            timeout_s=self.runtime.timeout_s,
            runtime=self.runtime.type,
            schedules=len(self.butler.schedule),
            db_url=self.butler.db.url or "",
            db_schema=self.db_schema,
            schema_chosen=self.butler.db.schema_ is not None,
        )

    @property
    def mcp_base_url(self) -> str:
        """Where runtimes reach this butler (loopback when bound to all addresses)."""
        host = self.butler.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"http://{host}:{self.butler.port}"

    @property
    def callback_url(self) -> str:
        """Where a runtime on a worker reaches this butler: ``public_url`` when set (the
        address from elsewhere), else :attr:`mcp_base_url` (docs/scaling.md)."""
        return self.butler.public_url or self.mcp_base_url
