"""The small tables of ``butler.toml``: env, db, memory, modules, telemetry."""

from __future__ import annotations

from pydantic import Field, field_validator

from butler.config.section import ENV_NAME_PATTERN, SCHEMA_PATTERN, Section


class EnvConfig(Section):
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


class DbConfig(Section):
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


class MemoryConfig(Section):
    """``[butler.memory]``: episodic memory injected into the system prompt."""

    enabled: bool = False
    max_episodes: int = Field(default=5, ge=1, le=100)
    #: Whether the owner's sessions recall what chat senders' sessions did too (each
    #: record labelled with its sender); by default they recall the owner's own only.
    recall_senders: bool = False


class ModuleConfig(Section):
    """``[butler.modules.<name>]``: an optional module and its credentials."""

    enabled: bool = True
    credentials: list[str] = Field(default_factory=list)


class TelemetryConfig(Section):
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
