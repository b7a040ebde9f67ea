"""The roster's chat channels in the daemon: planned before anything binds, started once
every butler serves, stopped before their spawners are drained for good.

Started only then because a routed message's session calls back into its
butler's server; stopped after the servers so that answers in hand (whose
sessions the drain ends) still reach their chats.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from butler.channels.assembly import Host, build_services, switchboard_of
from butler.config import ButlerConfig, load_config
from butler.config.channels import ChannelSettings
from butler.config.switchboard import SWITCHBOARD_FILE, SwitchboardSection, load_switchboard
from butler.context import ButlerContext
from butler.errors import ConfigError

log = logging.getLogger("butler.roster")

#: How long answers in hand get to reach their chats once the servers stopped.
STOP_TIMEOUT_S = 10.0


def plan(
    configs: Sequence[ButlerConfig], roster_names: Callable[[], list[str]]
) -> SwitchboardSection | None:
    """The roster's switchboard for these butlers, or None; a mistake in it is a ConfigError."""
    if not configs or not (configs[0].roster_dir / SWITCHBOARD_FILE).is_file():
        return None
    return switchboard_of(configs, roster_names())


def attach(butlers: Sequence[ButlerContext], switchboard: SwitchboardSection | None) -> None:
    """Give each butler that has channels (its own or the switchboard's) their service."""
    hosts = [Host(b.config, b.db, b.spawner) for b in butlers]
    services = build_services(hosts, switchboard)
    for butler in butlers:
        butler.channels = services.get(butler.config.name)


async def start_when_serving(butlers: Sequence[ButlerContext], serving: Callable[[], bool]) -> None:
    """Start every butler's channels once ``serving()`` says all servers accept."""
    while not serving():
        await asyncio.sleep(0.02)
    for butler in butlers:
        if butler.channels is not None:
            butler.channels.start()


async def stop(butlers: Sequence[ButlerContext]) -> None:
    """Stop every butler's channels, answers in hand given their time."""
    await asyncio.gather(
        *(b.channels.stop(STOP_TIMEOUT_S) for b in butlers if b.channels is not None)
    )


#: The butlers of a roster folder that load (``roster.load_each`` without the errors).
Roster = Callable[[Path], Sequence[ButlerConfig]]


def keeper(folder: Path, kind: str, roster: Roster, db_url: str | None = None) -> ButlerConfig:
    """The butler whose database keeps ``kind``'s pairings, for a butler or a roster folder.

    A butler folder keeps its own channel, or the switchboard's when it is its
    home; a roster folder means its switchboard's home.
    """

    def names(where: Path) -> list[str]:
        return [c.name for c in roster(where)]

    if (folder / "butler.toml").is_file():
        config = load_config(folder, db_url=db_url)
        if kind in config.butler.channels.enabled():
            return config
        switchboard = load_switchboard(config.roster_dir, names(config.roster_dir))
        if switchboard is not None and switchboard.home == config.name:
            if kind in switchboard.channels.enabled():
                return config
        raise ConfigError(
            f"{folder}: no {kind} channel here; expected [butler.channels.{kind}] in its "
            f"butler.toml (see docs/channels.md)"
        )
    switchboard = load_switchboard(folder, names(folder)) if folder.is_dir() else None
    if switchboard is None:
        raise ConfigError(
            f"{folder}: expected a butler folder (holding butler.toml) or a roster folder "
            f"holding {SWITCHBOARD_FILE}"
        )
    if kind not in switchboard.channels.enabled():
        raise ConfigError(
            f"{folder / SWITCHBOARD_FILE}: no {kind} channel; expected "
            f"[switchboard.channels.{kind}] (see docs/channels.md)"
        )
    for found in roster(folder):
        if found.name == switchboard.home:
            return load_config(found.config_dir, db_url=db_url)
    raise ConfigError(f"{folder}: the switchboard's home {switchboard.home!r} does not load")


def settings_of(config: ButlerConfig, kind: str, roster: Roster) -> ChannelSettings | None:
    """The settings of the ``kind`` channel ``config`` keeps: its own, or the switchboard's."""
    own = config.butler.channels.enabled().get(kind)
    if own is not None:
        return own
    names = [c.name for c in roster(config.roster_dir)]
    switchboard = load_switchboard(config.roster_dir, names)
    if switchboard is None or switchboard.home != config.name:
        return None
    return switchboard.channels.enabled().get(kind)
