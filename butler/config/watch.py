"""Whether a running butler's ``butler.toml`` changed since it was loaded.

A daemon reads its folder once: a changed setting takes effect at the next
start. Rather than apply half of a change (ports, the database, the jail's
policy cannot change under running sessions), the daemon says that a restart
is needed: a warning line once per change, and ``restart_needed`` in its
status.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from butler.config.model import ButlerConfig

#: Read at most this much of the file: a config is a few kilobytes.
MAX_BYTES = 1024 * 1024


def digest(path: Path) -> str | None:
    """The file's SHA-256, or None when it cannot be read."""
    try:
        with path.open("rb") as file:
            return hashlib.sha256(file.read(MAX_BYTES)).hexdigest()
    except OSError:
        return None


def current_digest(config: ButlerConfig) -> str | None:
    """The digest of the butler's ``butler.toml`` as it is now."""
    return digest(config.config_dir / "butler.toml")


def restart_needed(config: ButlerConfig) -> bool:
    """Whether ``butler.toml`` differs from what ``config`` was loaded from."""
    if config.source_digest is None:
        return False  # built in code, not loaded from a folder
    return current_digest(config) != config.source_digest
