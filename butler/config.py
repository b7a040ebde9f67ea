"""A butler's configuration: ``roster/<name>/butler.toml`` plus the environment.

A butler is a folder holding ``butler.toml``, ``CLAUDE.md`` (its system prompt)
and optionally ``skills/``. :func:`load_config` reads the folder into a typed,
validated :class:`ButlerConfig`; every mistake becomes one :class:`ConfigError`
line naming the file, the key, what was expected and what was found.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from croniter import croniter
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from butler.errors import ConfigError

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
SCHEMA_PATTERN = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RuntimeConfig(_Section):
    """``[butler.runtime]``: which agent CLI runs sessions, and its limits."""

    type: str = "claude-code"
    model: str | None = None
    max_concurrent_sessions: int = Field(default=1, ge=1, le=64)
    max_queued_sessions: int = Field(default=100, ge=0, le=10_000)
    max_turns: int = Field(default=20, ge=1, le=1000)
    timeout_s: float = Field(default=600.0, gt=0)
    args: list[str] = Field(default_factory=list)
    cli_path: str | None = None
    transport: Literal["http", "sse"] = "http"
    command: list[str] = Field(default_factory=list)
    interactive_command: list[str] = Field(default_factory=list)


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
        return names


class DbConfig(_Section):
    """``[butler.db]``: where the butler's tables live."""

    url: str | None = None
    schema_: str | None = Field(default=None, alias="schema")

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


class ButlerSection(_Section):
    """The ``[butler]`` table."""

    name: str
    port: int = Field(default=8100, ge=1, le=65535)
    description: str = ""
    host: str = "127.0.0.1"
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    env: EnvConfig = Field(default_factory=EnvConfig)
    db: DbConfig = Field(default_factory=DbConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
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


class EnvOverrides(BaseSettings):
    """Environment variables that override values of ``butler.toml``."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=True)

    DATABASE_URL: str | None = None
    BUTLER_PORT: int | None = None
    BUTLER_HOST: str | None = None
    BUTLER_DB_SCHEMA: str | None = None
    BUTLER_RUNTIME: str | None = None
    BUTLER_MODEL: str | None = None


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


def _where(loc: tuple[Any, ...]) -> str:
    """Render a pydantic error location as the TOML key a person wrote."""
    parts = [str(p) for p in loc if not isinstance(p, int)]
    if parts and parts[-1] == "schema_":
        parts[-1] = "schema"
    indexes = [p for p in loc if isinstance(p, int)]
    key = ".".join(parts)
    return f"{key}[{indexes[0]}]" if indexes else key


def _describe(error: Any, path: Path) -> str:
    """One line for the first pydantic error: what was wrong, where, what is expected."""
    kind = error["type"]
    loc = ("butler", *error["loc"])
    found = error.get("input")
    if kind == "extra_forbidden":
        table = _where(loc[:-1])
        return f"{path}: unknown key '{loc[-1]}' in [{table}]"
    if kind == "missing":
        return f"{path}: missing required key '{_where(loc)}'"
    msg = error["msg"].removeprefix("Value error, ")
    if "found" in msg:
        return f"{path}: {_where(loc)}: {msg}"
    return f"{path}: {_where(loc)}: {msg.lower()}, found {found!r} ({type(found).__name__})"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: expected a UTF-8 text file") from None


def _apply_env(table: dict[str, Any], env: EnvOverrides) -> dict[str, Any]:
    table = dict(table)
    db = dict(table.get("db") or {})
    runtime = dict(table.get("runtime") or {})
    if env.DATABASE_URL:
        db["url"] = env.DATABASE_URL
    if env.BUTLER_DB_SCHEMA:
        db["schema"] = env.BUTLER_DB_SCHEMA
    if env.BUTLER_PORT is not None:
        table["port"] = env.BUTLER_PORT
    if env.BUTLER_HOST:
        table["host"] = env.BUTLER_HOST
    if env.BUTLER_RUNTIME:
        runtime["type"] = env.BUTLER_RUNTIME
    if env.BUTLER_MODEL:
        runtime["model"] = env.BUTLER_MODEL
    if db:
        table["db"] = db
    if runtime:
        table["runtime"] = runtime
    return table


def _env_overrides() -> EnvOverrides:
    try:
        return EnvOverrides()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(
            f"environment variable {first['loc'][0]}: {first['msg'].lower()}, "
            f"found {first.get('input')!r}"
        ) from None


def load_config(config_dir: str | Path, **overrides: Any) -> ButlerConfig:
    """Load and validate the butler in ``config_dir``.

    ``overrides`` are ``[butler]`` keys given on the command line (``port``,
    ``db_url``); they win over the environment, which wins over the file.
    """
    folder = Path(config_dir).expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"{config_dir}: expected a butler folder holding butler.toml")
    path = folder / "butler.toml"
    if not path.is_file():
        raise ConfigError(f"{folder}: no butler.toml found; expected a butler folder")
    data = _read_toml(path)
    unknown = sorted(set(data) - {"butler"})
    if unknown:
        raise ConfigError(f"{path}: unknown table '{unknown[0]}'; expected only [butler]")
    table = data.get("butler")
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: missing [butler] table")
    if "name" not in table:
        raise ConfigError(f"{path}: missing required key 'butler.name'")
    table = _apply_env(table, _env_overrides())
    if overrides.get("port") is not None:
        table["port"] = overrides["port"]
    if overrides.get("db_url"):
        table["db"] = {**(table.get("db") or {}), "url": overrides["db_url"]}
    try:
        section = ButlerSection.model_validate(table)
    except ValidationError as exc:
        errors = exc.errors()
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConfigError(_describe(errors[0], path) + more) from None
    _check_runtime_type(section.runtime, path)
    prompt = folder / "CLAUDE.md"
    if not prompt.is_file():
        raise ConfigError(f"{folder}: missing CLAUDE.md (the butler's system prompt)")
    return ButlerConfig(butler=section, config_dir=folder, system_prompt_path=prompt)


def _check_runtime_type(runtime: RuntimeConfig, path: Path) -> None:
    from butler.runtimes.registry import adapter_class, available_runtimes

    names = available_runtimes()
    if runtime.type not in names:
        raise ConfigError(
            f"{path}: butler.runtime.type: unknown runtime {runtime.type!r}; "
            f"expected one of {', '.join(names)}"
        )
    try:
        adapter_class(runtime.type).validate_config(runtime)
    except ValueError as exc:
        raise ConfigError(f"{path}: butler.runtime.{exc}") from None
