"""Credential isolation: the exact environment a runtime process gets.

Only PATH, the core API keys, the butler's declared variables, the enabled
modules' credential variables and (when a trace is active) TRACEPARENT. Values
resolve database first, environment second; nothing else of the daemon's
environment reaches the runtime.

A session a chat's sender steers (:attr:`Session.tenant
<butler.spawner.session.Session.tenant>`) gets less: the model's keys (the
core ones and its runtime's, :mod:`.logins`) and its address (``*_BASE_URL``),
and the declared variables the owner lists in ``[butler.channels] sender_env``.
Its sender can ask it to print its environment; the owner's service keys are
not there to print.
"""

from __future__ import annotations

import os

from butler.config import ButlerConfig
from butler.errors import ConfigError
from butler.spawner.logins import NEEDS
from butler.store.credentials import CredentialStore
from butler.store.outages import through_outage

CORE_API_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
#: How a variable naming a model API's address ends (``ANTHROPIC_BASE_URL``...).
MODEL_ADDRESS = "_BASE_URL"
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def declared_names(config: ButlerConfig) -> list[str]:
    """Every variable name a runtime of this butler may receive, in a stable order."""
    names: list[str] = list(CORE_API_KEYS)
    names += config.butler.env.required + config.butler.env.optional
    for module in config.butler.modules.values():
        if module.enabled:
            names += module.credentials
    return list(dict.fromkeys(names))


def sender_names(config: ButlerConfig, runtime: str) -> list[str]:
    """The variables a chat sender's session of ``runtime`` may receive, of those the
    butler declares: the model's keys, where its API is (``*_BASE_URL``: the runtime
    and its jail's egress follow them) and ``[butler.channels] sender_env``."""
    model = set(CORE_API_KEYS) | set(NEEDS[runtime].keys if runtime in NEEDS else ())
    given = model | set(config.butler.channels.sender_env)
    names = declared_names(config)
    return [name for name in names if name in given or name.endswith(MODEL_ADDRESS)]


async def build_runtime_env(
    config: ButlerConfig,
    credentials: CredentialStore,
    traceparent: str | None = None,
    outage_limit_s: float = 0.0,
    *,
    sender_runtime: str | None = None,
) -> dict[str, str]:
    """The runtime's environment; a missing required variable is a ConfigError.

    ``sender_runtime``, for a session a chat's sender steers, is the runtime it runs:
    that session gets :func:`sender_names` only. The credentials are read again while
    the database is unreachable, for at most ``outage_limit_s`` seconds: a session admitted
    just before an outage waits it out.
    """
    if sender_runtime is None:
        names = declared_names(config)
    else:
        names = sender_names(config, sender_runtime)
    values = await through_outage(lambda: credentials.resolve_many(names), outage_limit_s)
    missing = [n for n in config.butler.env.required if n in names and n not in values]
    if missing:
        raise ConfigError(
            f"{config.config_dir / 'butler.toml'}: required variable {missing[0]} has no value; "
            "expected it in the credentials table or the daemon's environment"
        )
    env = {"PATH": os.environ.get("PATH", DEFAULT_PATH), **values}
    if traceparent:
        env["TRACEPARENT"] = traceparent
    return env
