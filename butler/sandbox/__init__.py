"""The jail around every runtime process, and the egress proxy that is its only way out.

``policy`` says what a jail sees of the file system and builds the bubblewrap
argv; ``seccomp`` makes its system-call filter; ``egress`` is the daemon-side
proxy; ``bridge`` runs inside the jail;
``jail`` ties them into one run; this module decides, once per daemon,
whether runtimes are jailed, and what a butler session's jail holds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from butler.config import ButlerConfig, SandboxConfig
from butler.errors import ConfigError
from butler.sandbox.jail import INSTALL_HINT, Jail, allowed_targets, open_jail, probe
from butler.sandbox.policy import JailPolicy

__all__ = [
    "INSTALL_HINT",
    "Jail",
    "JailPolicy",
    "allowed_targets",
    "butler_policy",
    "open_jail",
    "probe",
    "probe_if_used",
    "resolve_mode",
]

log = logging.getLogger("butler.sandbox")


def resolve_mode(config: SandboxConfig, where: str = "[butler.sandbox]") -> str:
    """``"bwrap"`` or ``"none"``: what this daemon's runtimes run in.

    ``mode = "bwrap"`` without a working bubblewrap is a ConfigError naming the
    install command; ``auto`` falls back to no jail with one loud warning line.
    """
    if config.mode == "none":
        return "none"
    reason = probe()
    if reason is None:
        return "bwrap"
    if config.mode == "bwrap":
        raise ConfigError(f'{where} mode = "bwrap": {reason}')
    log.warning(
        "SANDBOX OFF: runtimes run unjailed, with this user's rights and network: %s", reason
    )
    return "none"


def probe_if_used(configs: Iterable[ButlerConfig]) -> None:
    """Start one jail, once, when a butler of ``configs`` may use it (the answer is cached)."""
    if any(c.butler.sandbox.mode != "none" for c in configs):
        probe()


def butler_policy(
    config: ButlerConfig,
    *,
    workspace: Path,
    home: Path,
    cwd: Path,
    writable: tuple[Path, ...] = (),
) -> JailPolicy:
    """A butler session's jail: its workspace, home and own folder writable, the rest read-only.

    The butler may edit its skills and files (spec 001) but never its
    ``butler.toml``, nor the roster's ``shared/`` folder every butler reads.
    The home is shown at one fixed path (:data:`~butler.sandbox.policy.JAIL_HOME`).
    """
    folder = config.config_dir
    extra = tuple(Path(p) for p in config.butler.sandbox.read_only)
    return JailPolicy(
        read_only=(config.roster_dir / "shared", *extra),
        writable=(workspace, folder, *writable),
        read_only_over=(folder / "butler.toml", config.roster_dir / "shared"),
        cwd=cwd,
        home=home,
    )
