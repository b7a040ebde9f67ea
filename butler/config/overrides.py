"""Environment variables that win over ``butler.toml``.

(``BUTLER_SANDBOX`` is read where the sandbox mode is resolved, ``butler.sandbox``,
the one place shared with ``ask`` and ``chat``.)

A plain model read from ``os.environ`` rather than pydantic-settings: its import
alone cost every ``butler`` command about 0.2 s of CPU for six variables.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from butler.config.errors import describe
from butler.errors import ConfigError


class EnvOverrides(BaseModel):
    """Environment variables that override values of ``butler.toml``."""

    model_config = ConfigDict(extra="ignore")

    DATABASE_URL: str | None = None
    BUTLER_PORT: int | None = None
    BUTLER_HOST: str | None = None
    BUTLER_DB_SCHEMA: str | None = None
    BUTLER_RUNTIME: str | None = None
    BUTLER_MODEL: str | None = None


def apply_env(
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
    }
    for key, (variable, value) in values.items():
        if value is not None:
            put(table, key, value)
            sources[key] = f"environment variable {variable}"
    return table


def put(table: dict[str, Any], key: tuple[str, ...], value: Any) -> None:
    if len(key) == 1:
        table[key[0]] = value
        return
    inner = table.get(key[0])
    table[key[0]] = {**(inner if isinstance(inner, dict) else {}), key[1]: value}


def env_overrides() -> EnvOverrides:
    try:
        return EnvOverrides.model_validate(
            {name: os.environ[name] for name in EnvOverrides.model_fields if name in os.environ}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"environment variable {first['loc'][0]}: {describe(first)}") from None
