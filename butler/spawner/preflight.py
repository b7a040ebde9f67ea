"""What a person must do before sessions can work, said once at start and again on failure.

At start, :func:`check` warns (one line each) about a runtime CLI that is not
installed (naming its install command) and a runtime with no usable
credential: no key among the variables its sessions receive, in the
``credentials`` table or the environment, and no login in the butler's
runtime home. When a session fails because the CLI is not logged in,
:func:`explain` turns the CLI's own words into a message naming the variable.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from butler.config import ButlerConfig
from butler.runtimes.base import RuntimeAdapter, RuntimeFailure
from butler.spawner.environment import declared_names
from butler.spawner.logins import NEEDS, Needs
from butler.store.credentials import CredentialStore

log = logging.getLogger("butler.preflight")


#: What the CLIs say when they have no credential (their words vary; these are the stable parts).
_NO_CREDENTIAL = re.compile(
    r"not logged in|please run /login|invalid api key|api key|unauthori[sz]ed|\b401\b"
    r"|authentication|not authenticated|auth method|no credentials|login required",
    re.IGNORECASE,
)


def login_home(config: ButlerConfig) -> Path:
    """The runtime home every session of the butler is seeded from (where a login lives)."""
    from butler.paths import butler_dir

    return butler_dir(config) / "home"


#: Where the person who started the daemon sets its keys, when that is not the daemon's
#: own environment: docker-compose.yml names .env, a service unit its environment file.
CREDENTIALS_FROM = "BUTLER_CREDENTIALS_FROM"


def key_hint(config: ButlerConfig) -> str:
    """``set NAME`` for the runtime's first key, in the words a person acts on."""
    key = NEEDS[config.runtime.type].keys[0]
    keys_from = os.environ.get(CREDENTIALS_FROM)
    if keys_from:
        # Started by a deployment: the paths the daemon sees may mean nothing to the person.
        return f"set {key} in {keys_from}"
    return (
        f"set {key} (in the daemon's environment, or in the database: "
        f"`butler credentials set {key} -c {config.config_dir}`)"
    )


def _or_log_in(config: ButlerConfig, needs: Needs) -> str:
    """``, or log it in under HOME (how)``; nothing for a deployment naming its keys' place."""
    if os.environ.get(CREDENTIALS_FROM):
        return ""
    return f", or log it in under {login_home(config)} ({needs.login_hint})"


def explain(config: ButlerConfig, error: str) -> str:
    """``error``, with what to do added when it says the runtime has no credential."""
    runtime = config.runtime.type
    if runtime not in NEEDS or not _NO_CREDENTIAL.search(error):
        return error
    needs = NEEDS[runtime]
    return (
        f"{runtime} has no usable credential: {key_hint(config)}{_or_log_in(config, needs)}; "
        f"the CLI said: {error}"
    )[:2000]


async def missing_credential(config: ButlerConfig, credentials: CredentialStore) -> str | None:
    """One line saying what to set, or None when the runtime has a key or a login."""
    runtime = config.runtime.type
    needs = NEEDS.get(runtime)
    if needs is None:
        return None
    # A key only counts when sessions receive it: the declared names are all they get.
    names = [k for k in needs.keys if k in declared_names(config)]
    if await credentials.resolve_many(names):
        return None
    home = login_home(config)
    if any((home / login).is_file() for login in needs.logins):
        return None
    declare = (
        ""
        if needs.keys[0] in declared_names(config)
        else (f", and list it in [butler.env] optional of {config.config_dir / 'butler.toml'}")
    )
    return (
        f"butler {config.name}: runtime {runtime} has no credential, its sessions will "
        f"fail: {key_hint(config)}{declare}{_or_log_in(config, needs)}"
    )


def missing_cli(adapter: RuntimeAdapter) -> str | None:
    """One line naming the install command when the runtime's CLI is not installed."""
    if adapter.type_name not in NEEDS:
        return None  # command and external runtimes name their own programs
    find = getattr(adapter, "binary", None)
    if callable(find):
        try:
            find({"PATH": os.environ.get("PATH", "")})
        except RuntimeFailure as exc:
            return f"runtime {adapter.type_name}: {exc}"
        return None
    cli_path = getattr(adapter, "cli_path", None)
    if callable(cli_path):
        path = cli_path()
        if not os.access(path, os.X_OK):
            return (
                f"runtime {adapter.type_name}: Claude Code not found at {path}; "
                "reinstall claude-agent-sdk (`pip install --force-reinstall claude-agent-sdk`), "
                "which bundles it, or set [butler.runtime] cli_path"
            )
    return None


async def check(
    config: ButlerConfig, adapter: RuntimeAdapter, credentials: CredentialStore
) -> list[str]:
    """Warn, one line each, about what would make every session of this butler fail."""
    found = (missing_cli(adapter), await missing_credential(config, credentials))
    problems = [p for p in found if p]
    for problem in problems:
        log.warning(problem)
    return problems
