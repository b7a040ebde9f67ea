"""A butler's configuration: ``roster/<name>/butler.toml`` plus the environment.

A butler is a folder holding ``butler.toml``, ``CLAUDE.md`` (its system prompt)
and optionally ``skills/``. :func:`load_config` reads the folder into a typed,
validated :class:`ButlerConfig`; every mistake becomes one :class:`ConfigError`
line naming the file, the key, what was expected and what was found.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from croniter import croniter
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from butler.config_errors import describe, validation_error_line
from butler.errors import ConfigError
from butler.runtimes.registry import adapter_class, available_runtimes
from butler.runtimes.settings import RuntimeConfig
from butler.tomlfile import read_toml

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
SCHEMA_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
HOST_PATTERN = re.compile(r"^([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]{2,39}\])(:[0-9]{1,5})?$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EnvConfig(_Section):
    """``[butler.env]``: names of variables passed through to runtimes."""

    required: list[str] = Field(default_factory=list)
    optional: list[str] = Field(default_factory=list)

    @field_validator("required", "optional")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not ENV_NAME_PATTERN.match(name):
                raise ValueError(f"expected an environment variable name, found {name!r}")
            if name == "BUTLER_TOKEN":
                raise ValueError("BUTLER_TOKEN is the owner's token and never goes to a runtime")
        return names


class BuildersConfig(_Section):
    """``[butler.builders]``: how many may run at once; runtimes to pick with ``--runtime``."""

    max_running: int = Field(default=4, ge=1, le=64)
    runtimes: dict[str, RuntimeConfig] = Field(default_factory=dict, max_length=32)


class DbConfig(_Section):
    """``[butler.db]``: where the butler's tables live."""

    url: str | None = None
    schema_: str | None = Field(default=None, alias="schema")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value and not value.startswith(("postgresql://", "postgres://")):
            from butler.store.db import redact_dsn

            raise ValueError(
                "expected a URL like postgresql://user@host:5432/database, "
                f"found {redact_dsn(value)!r}"
            )
        return value

    @field_validator("schema_")
    @classmethod
    def _schema(cls, value: str | None) -> str | None:
        if value is not None and not SCHEMA_PATTERN.match(value):
            raise ValueError(f"expected a lower-case SQL identifier, found {value!r}")
        return value


class MemoryConfig(_Section):
    """``[butler.memory]``: episodic memory injected into the system prompt."""

    enabled: bool = False
    max_episodes: int = Field(default=5, ge=1, le=100)


class SandboxConfig(_Section):
    """``[butler.sandbox]``: the jail every runtime process runs in.

    ``auto`` jails runtimes when bubblewrap can start here and warns once when it
    cannot; ``bwrap`` refuses to start without it; ``none`` runs them unjailed.
    """

    mode: Literal["auto", "bwrap", "none"] = "auto"
    allow_hosts: list[str] = Field(default_factory=list, max_length=100)
    read_only: list[str] = Field(default_factory=list, max_length=100)

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


class ModuleConfig(_Section):
    """``[butler.modules.<name>]``: an optional module and its credentials."""

    enabled: bool = True
    credentials: list[str] = Field(default_factory=list)


class ScheduleConfig(_Section):
    """One ``[[butler.schedule]]`` entry: a prompt fired on a cron expression."""

    name: str
    cron: str
    prompt: str
    timezone: str = "UTC"

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
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"expected an IANA time zone like 'Europe/Paris', found {value!r}"
            ) from None
        return value


class TelemetryConfig(_Section):
    """``[butler.telemetry]``: where the owner reads traces (export itself is ``OTEL_*``)."""

    #: A trace's web address with ``{trace_id}`` in it, e.g. Grafana's explore link.
    trace_url: str | None = Field(default=None, max_length=2000)

    @field_validator("trace_url")
    @classmethod
    def _trace_url(cls, value: str | None) -> str | None:
        if value is not None and (
            "{trace_id}" not in value or not value.startswith(("http://", "https://"))
        ):
            raise ValueError(
                "expected an http(s) address with {trace_id} in it, e.g. "
                f"'http://localhost:3000/explore?traceId={{trace_id}}', found {value[:80]!r}"
            )
        return value


class ButlerSection(_Section):
    """The ``[butler]`` table."""

    name: str
    port: int = 8100
    description: str = ""
    host: str = "127.0.0.1"
    #: Host names (besides loopback and the bound address) a request may be addressed to.
    allowed_hosts: list[str] = Field(default_factory=list)
    #: Browser origins (besides the dashboard's own) a request may come from.
    allowed_origins: list[str] = Field(default_factory=list)
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
    schedule: list[ScheduleConfig] = Field(default_factory=list)

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

    @field_validator("port")
    @classmethod
    def _port(cls, value: int) -> int:
        if not 1 <= value <= 65535:
            raise ValueError(f"expected a port number from 1 to 65535, found {value}")
        return value


class EnvOverrides(BaseSettings):
    """Environment variables that override values of ``butler.toml``."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=True)

    DATABASE_URL: str | None = None
    BUTLER_PORT: int | None = None
    BUTLER_HOST: str | None = None
    BUTLER_DB_SCHEMA: str | None = None
    BUTLER_RUNTIME: str | None = None
    BUTLER_MODEL: str | None = None
    BUTLER_SANDBOX: str | None = None


class ButlerConfig(BaseModel):
    """A loaded butler: its ``[butler]`` table and where it came from."""

    model_config = ConfigDict(frozen=True)

    butler: ButlerSection
    config_dir: Path
    system_prompt_path: Path

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

    @property
    def mcp_base_url(self) -> str:
        """Where runtimes reach this butler (loopback when bound to all addresses)."""
        host = self.butler.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"http://{host}:{self.butler.port}"


def _apply_env(
    table: dict[str, Any], env: EnvOverrides, sources: dict[tuple[str, ...], str]
) -> dict[str, Any]:
    """``table`` with the environment's values put in; ``sources`` notes which came from where."""
    table = dict(table)
    values: dict[tuple[str, ...], tuple[str, Any]] = {
        ("db", "url"): ("DATABASE_URL", env.DATABASE_URL or None),
        ("db", "schema"): ("BUTLER_DB_SCHEMA", env.BUTLER_DB_SCHEMA or None),
        ("port",): ("BUTLER_PORT", env.BUTLER_PORT),
        ("host",): ("BUTLER_HOST", env.BUTLER_HOST or None),
        ("runtime", "type"): ("BUTLER_RUNTIME", env.BUTLER_RUNTIME or None),
        ("runtime", "model"): ("BUTLER_MODEL", env.BUTLER_MODEL or None),
        ("sandbox", "mode"): ("BUTLER_SANDBOX", env.BUTLER_SANDBOX or None),
    }
    for key, (variable, value) in values.items():
        if value is not None:
            _put(table, key, value)
            sources[key] = f"environment variable {variable}"
    return table


def _put(table: dict[str, Any], key: tuple[str, ...], value: Any) -> None:
    if len(key) == 1:
        table[key[0]] = value
        return
    inner = table.get(key[0])
    table[key[0]] = {**(inner if isinstance(inner, dict) else {}), key[1]: value}


def _env_overrides() -> EnvOverrides:
    try:
        return EnvOverrides()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"environment variable {first['loc'][0]}: {describe(first)}") from None


def load_config(config_dir: str | Path, **overrides: Any) -> ButlerConfig:
    """Load and validate the butler in ``config_dir``.

    ``overrides`` are ``[butler]`` keys given on the command line (``port``,
    ``db_url``); they win over the environment, which wins over the file.
    """
    folder = Path(config_dir).expanduser().resolve()
    expected = "expected a butler folder holding butler.toml and CLAUDE.md"
    if not folder.exists():
        raise ConfigError(f"{config_dir}: no such folder; {expected}")
    if not folder.is_dir():
        raise ConfigError(f"{config_dir}: not a folder; {expected}")
    path = folder / "butler.toml"
    if not path.is_file():
        raise ConfigError(f"{folder}: no butler.toml found; {expected}")
    data = read_toml(path)
    unknown = sorted(set(data) - {"butler"})
    if unknown:
        raise ConfigError(f"{path}: unknown table '{unknown[0]}'; expected only [butler]")
    table = data.get("butler")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: missing [butler] table; expected one with at least name = ...")
    if "name" not in table:
        raise ConfigError(f"{path}: [butler]: missing required key 'name' (the butler's name)")
    sources: dict[tuple[str, ...], str] = {}
    table = _apply_env(table, _env_overrides(), sources)
    if overrides.get("port") is not None:
        _put(table, ("port",), overrides["port"])
        sources[("port",)] = "--port"
    if overrides.get("db_url"):
        _put(table, ("db", "url"), overrides["db_url"])
        sources[("db", "url")] = "--database-url"
    try:
        # Strict: a TOML value has a type; "8100" or true is no port number.
        section = ButlerSection.model_validate(table, strict=True)
    except ValidationError as exc:
        raise ConfigError(validation_error_line(exc, path, sources, ButlerSection)) from None
    where = sources.get(("runtime", "type"), str(path))
    _check_runtime_type(section.runtime, path, where, "butler.runtime")
    for name, table in section.builders.runtimes.items():
        table = table.model_copy(update={"type": name})
        _check_runtime_type(table, path, str(path), f"butler.builders.runtimes.{name}")
    prompt = folder / "CLAUDE.md"
    if not prompt.is_file():
        raise ConfigError(f"{folder}: missing CLAUDE.md (the butler's system prompt)")
    return ButlerConfig(butler=section, config_dir=folder, system_prompt_path=prompt)


def _check_runtime_type(runtime: RuntimeConfig, path: Path, where: str, key: str) -> None:
    roster = path.parent.parent
    try:
        names = available_runtimes(roster)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if runtime.type not in names:
        raise ConfigError(
            f"{where}: {key}.type: unknown runtime {runtime.type!r}; "
            f"expected one of {', '.join(names)}"
        )
    try:
        adapter_class(runtime.type, roster).validate_config(runtime)
    except ValueError as exc:
        raise ConfigError(f"{where}: {key}.{exc}") from None
