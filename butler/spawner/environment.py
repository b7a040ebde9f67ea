"""Credential isolation: the exact environment a runtime process gets.

Only PATH, the core API keys, the butler's declared variables, the enabled
modules' credential variables and (when a trace is active) TRACEPARENT. Values
resolve database first, environment second; nothing else of the daemon's
environment reaches the runtime.
"""

from __future__ import annotations

import os

from butler.config import ButlerConfig
from butler.errors import ConfigError
from butler.store.credentials import CredentialStore
from butler.store.outages import through_outage

CORE_API_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def declared_names(config: ButlerConfig) -> list[str]:
    """Every variable name a runtime of this butler may receive, in a stable order."""
    names: list[str] = list(CORE_API_KEYS)
    names += config.butler.env.required + config.butler.env.optional
    for module in config.butler.modules.values():
        if module.enabled:
            names += module.credentials
    return list(dict.fromkeys(names))


async def build_runtime_env(
    config: ButlerConfig,
    credentials: CredentialStore,
    traceparent: str | None = None,
    patience: float = 0.0,
) -> dict[str, str]:
    """The runtime's environment; a missing required variable is a ConfigError.

    The credentials are read again while the database is unreachable, for at most
    ``patience`` seconds: a session admitted just before an outage waits it out.
    """
    names = declared_names(config)
    values = await through_outage(lambda: credentials.resolve_many(names), patience)
    missing = [n for n in config.butler.env.required if n not in values]
    if missing:
        raise ConfigError(
            f"{config.config_dir / 'butler.toml'}: required variable {missing[0]} has no value; "
            "expected it in the credentials table or the daemon's environment"
        )
    env = {"PATH": os.environ.get("PATH", DEFAULT_PATH), **values}
    if traceparent:
        env["TRACEPARENT"] = traceparent
    return env
