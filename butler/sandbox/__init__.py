"""The jail around every runtime process, and the egress proxy that is its only way out.

``policy`` says what a jail sees of the file system and builds the bubblewrap
argv; ``seccomp`` makes its system-call filter; ``egress`` is the daemon-side
proxy; ``bridge`` runs inside the jail; ``jail`` ties them into one run.

This module holds the two decisions every caller shares. :func:`resolve_mode`
decides whether runtimes are jailed (``BUTLER_SANDBOX`` over ``[sandbox] mode``),
the only place that reads either. :func:`jail_policy` and :func:`jail_targets`
turn a :class:`JailRequest` (what one caller's runtime must see and reach: a
butler session, a builder, an ``ask``/``chat`` agent) into the jail's file
system and allow-list, adding what the owner configured for every jail.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from butler.config import ButlerConfig, SandboxConfig
from butler.errors import ConfigError
from butler.sandbox.egress import ALLOW_SETTING, Target
from butler.sandbox.hosts import allowed_targets
from butler.sandbox.installs import installation, known, script_venvs
from butler.sandbox.jail import (
    INSTALL_HINT,
    Jail,
    open_jail,
    probe,
    start_jail,
)
from butler.sandbox.leftovers import look_after_butler_folder
from butler.sandbox.policy import JailPolicy

__all__ = [
    "INSTALL_HINT",
    "MODE_VARIABLE",
    "Jail",
    "JailPolicy",
    "JailRequest",
    "allowed_targets",
    "jail_policy",
    "jail_targets",
    "look_after_butler_folder",
    "open_jail",
    "probe",
    "probe_if_used",
    "requested_mode",
    "resolve_mode",
    "start_jail",
]

log = logging.getLogger("butler.sandbox")

#: The environment variable that overrides ``[sandbox] mode`` for every butler and ``ask``.
MODE_VARIABLE = "BUTLER_SANDBOX"
MODES = ("auto", "bwrap", "none")


def requested_mode(settings: SandboxConfig) -> str:
    """``auto``, ``bwrap`` or ``none``: ``BUTLER_SANDBOX`` when set, else the file's mode."""
    override = os.environ.get(MODE_VARIABLE)
    if not override:
        return settings.mode
    if override not in MODES:
        raise ConfigError(
            f"environment variable {MODE_VARIABLE}: expected one of {', '.join(MODES)}, "
            f"found {override[:40]!r}"
        )
    return override


def resolve_mode(settings: SandboxConfig, where: str = "[sandbox]") -> str:
    """``"bwrap"`` or ``"none"``: what runtimes run in, decided once per daemon or call.

    ``bwrap`` without a working bubblewrap is a ConfigError naming the install
    command and where the mode was set; ``auto`` falls back to no jail with one
    loud warning line.
    """
    mode = requested_mode(settings)
    if mode == "none":
        return "none"
    reason = probe()
    if reason is None:
        return "bwrap"
    if mode == "bwrap":
        source = f"{MODE_VARIABLE}=bwrap" if os.environ.get(MODE_VARIABLE) else where
        raise ConfigError(f'{source} mode = "bwrap": {reason}')
    log.warning(
        "SANDBOX OFF: runtimes run unjailed, with this user's rights and network: %s", reason
    )
    return "none"


def probe_if_used(configs: Iterable[ButlerConfig]) -> None:
    """Start one jail, once, when a butler of ``configs`` may use it (the answer is cached)."""
    if any(requested_mode(c.butler.sandbox) != "none" for c in configs):
        probe()


@dataclass(frozen=True)
class JailRequest:
    """What one caller's runtime must see and reach; the owner's settings add the rest."""

    #: Where the runtime starts.
    cwd: Path
    #: Folders it may write at their own paths (its workspace, a builder's worktree...).
    writable: tuple[Path, ...]
    #: The session's home, writable at one fixed path (:data:`~butler.sandbox.policy.JAIL_HOME`).
    home: Path | None = None
    #: Paths it may read besides the system (sources of an ``ask``, the roster's shared folder).
    readable: tuple[Path, ...] = ()
    #: Paths inside a writable folder bound read-only again on top (a butler's ``butler.toml``).
    protected: tuple[Path, ...] = ()
    #: Paths inside a writable folder held read-only, or empty and read-only when missing
    #: (a butler folder's ``.git`` and ``.builders/``): :attr:`JailPolicy.held`.
    held: tuple[Path, ...] = ()
    #: The runtime type or agent name: whose default model API it may reach.
    runtime: str = ""
    #: The runtime's variables and arguments: every ``http(s)`` URL in them is its model API.
    env: Mapping[str, str] = field(default_factory=dict)
    args: Sequence[str] = ()
    #: The butler's MCP server, when the runtime calls back into one.
    mcp_url: str | None = None
    #: Where the owner lets this jail reach one more host: the proxy's refusals name it.
    allow_setting: str = ALLOW_SETTING
    #: The runtime's CLI, by name (found on ``env``'s ``PATH``) or path: where the jail
    #: hides it (nvm, ``node_modules/.bin``, pipx), its installation is bound read-only.
    programs: tuple[str, ...] = ()
    #: Scripts it may run (a butler's skills): the virtualenvs their first lines
    #: name are bound read-only (:func:`~butler.sandbox.installs.script_venvs`).
    scripts: tuple[Path, ...] = ()


def jail_policy(settings: SandboxConfig, request: JailRequest) -> JailPolicy:
    """The jail's file system: ``request`` plus ``[sandbox] read_only``."""
    extra = tuple(Path(p).expanduser() for p in settings.read_only)
    policy = JailPolicy(
        read_only=(*request.readable, *extra),
        writable=request.writable,
        read_only_over=request.protected,
        held=request.held,
        cwd=request.cwd,
        home=request.home,
        max_processes=settings.max_processes,
        max_memory_mb=settings.max_memory_mb,
    )
    return policy.with_read_only(*installed(policy, request))


def installed(policy: JailPolicy, request: JailRequest) -> tuple[Path, ...]:
    """The installations of ``request``'s programs that ``policy`` does not show.

    The daemon's ``PATH`` finds a CLI where its user installed it, often in a home
    the jail hides; without its installation the jail's ``PATH`` (only folders it
    shows) would not find it, and every session would fail. Only an installation
    whose extent is known (:func:`~butler.sandbox.installs.known`) is bound.
    """
    search = request.env.get("PATH", os.environ.get("PATH", ""))
    folders: list[Path] = []
    for program in request.programs:
        found = shutil.which(program, path=search)
        if found is not None and not policy.sees(Path(found)) and known(Path(found)):
            folders += installation(Path(os.path.abspath(found)), search)
    for script in request.scripts:
        folders += script_venvs(script)
    return tuple(f for f in dict.fromkeys(folders) if not policy.sees(f))


def jail_targets(settings: SandboxConfig, request: JailRequest) -> frozenset[Target]:
    """Everything the jail may reach: its butler, its model API, ``[sandbox] allow_hosts``."""
    return allowed_targets(
        request.runtime, request.env, request.args, request.mcp_url, settings.allow_hosts
    )
