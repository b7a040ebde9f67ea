"""A roster folder read into its butlers' configs: what every roster command starts from.

Apart from :mod:`butler.roster` (which serves them) so that ``butler list`` and
the other commands that only read a roster do not import the daemon's stack.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from butler.errors import ConfigError
from butler.essentials import Essentials, read_essentials

if TYPE_CHECKING:
    from butler.config import ButlerConfig

#: The roster folder of prompt snippets, which is not a butler.
SHARED = "shared"


def butler_folders(roster_dir: Path) -> list[Path]:
    """Every sub-folder of the roster holding a butler.toml, by name."""
    if not roster_dir.is_dir():
        raise ConfigError(f"{roster_dir}: expected a roster folder holding butler folders")
    return sorted(
        p for p in roster_dir.iterdir() if p.name != SHARED and (p / "butler.toml").is_file()
    )


def essentials_each(roster_dir: Path) -> list[Essentials | ConfigError]:
    """What ``butler list`` shows of each butler folder, or the error that stops it loading.

    Read plainly (:mod:`butler.essentials`); a folder whose shown settings are
    unclear is loaded fully, so that its mistake is named as ``butler run`` names it.
    """
    found: list[Essentials | ConfigError] = []
    for folder in butler_folders(roster_dir):
        seen = read_essentials(folder)
        if seen is not None and seen.runtime is not None and seen.schedules is not None:
            found.append(seen)
            continue
        from butler.config import load_config

        try:
            found.append(load_config(folder).essentials())
        except ConfigError as exc:
            found.append(exc)
    return found


def load_each(roster_dir: Path) -> list[ButlerConfig | ConfigError]:
    """Every butler folder's config, or the error that stops it loading."""
    from butler.config import load_config

    found: list[ButlerConfig | ConfigError] = []
    for folder in butler_folders(roster_dir):
        try:
            found.append(load_config(folder))
        except ConfigError as exc:
            found.append(exc)
    return found


def roster_names(roster_dir: Path) -> list[str]:
    """The names of the roster's butlers that load."""
    from butler.config import ButlerConfig

    return [c.name for c in load_each(roster_dir) if isinstance(c, ButlerConfig)]


def load_roster(
    roster_dir: Path, only: Sequence[str] = (), db_url: str | None = None
) -> list[ButlerConfig]:
    """Load the roster's butlers (or the ``only`` ones) and check they can run together."""
    from butler.config import load_config

    configs = [load_config(folder, db_url=db_url) for folder in butler_folders(roster_dir)]
    if not configs:
        raise ConfigError(f"{roster_dir}: no butler folders (sub-folders holding butler.toml)")
    names = [c.name for c in configs]
    unknown = [name for name in only if name not in names]
    if unknown:
        raise ConfigError(
            f"--only: no butler named {unknown[0]!r} in {roster_dir}; "
            f"expected some of {', '.join(names)}"
        )
    if only:
        configs = [c for c in configs if c.name in only]
    check_distinct(configs)
    return configs


def check_distinct(configs: Sequence[ButlerConfig]) -> None:
    """Two butlers of one process cannot share a port, a name or a schema."""
    for what, key in (
        ("port", lambda c: c.butler.port),
        ("name", lambda c: c.name),
        ("schema", lambda c: c.db_schema),
    ):
        seen: dict[object, ButlerConfig] = {}
        for config in configs:
            other = seen.setdefault(key(config), config)
            if other is not config:
                raise ConfigError(
                    f"{what} {key(config)} is claimed by both {other.name} ({other.config_dir}) "
                    f"and {config.name} ({config.config_dir}); expected one {what} per butler"
                )
