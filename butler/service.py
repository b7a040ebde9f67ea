"""``butler service install``: the roster as a systemd user service.

A user unit runs ``butler up`` for one roster folder, as its owner, restarted
when it fails, started at login (or at boot with ``loginctl enable-linger``).
Variables such as ``ANTHROPIC_API_KEY`` or ``DATABASE_URL`` come from an
optional environment file (mode 0600), never from the unit, which anyone on
the machine may read. systemd stops it with SIGTERM and waits longer than the
daemon's drain (30 s for sessions, 5 s for their callers), so running
sessions end as ``cancelled``, never killed unrecorded.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from butler.errors import UserError

#: What a unit's name may be: ``butler`` or ``butler-<something>``.
UNIT_NAME = re.compile(r"^butler(-[a-z0-9][a-z0-9_-]{0,39})?$")
#: Seconds systemd waits after SIGTERM: the drain's 30 s, the callers' 5 s, and a margin.
STOP_TIMEOUT_S = 60

UNIT = """\
# Written by `butler service install`; `butler service remove` deletes it.
[Unit]
Description=butler roster {roster}
Documentation=file://{roster}
Wants=network-online.target
After=network-online.target

[Service]
Type=exec
WorkingDirectory={workdir}
# Keys and settings (ANTHROPIC_API_KEY=..., DATABASE_URL=...), one per line, mode 0600.
EnvironmentFile=-{env_file}
ExecStart={exec_start}
Restart=on-failure
RestartSec=5
KillMode=mixed
KillSignal=SIGTERM
TimeoutStopSec={stop_timeout}

[Install]
WantedBy=default.target
"""


def unit_folder() -> Path:
    """Where systemd looks for this user's units."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def env_file() -> Path:
    """The optional environment file the unit reads."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "butler" / "service.env"


def unit_text(roster: Path, butler_command: Path, log_format: str = "json") -> str:
    """The unit running ``butler up`` for ``roster`` (an absolute path)."""
    argv = [str(butler_command), "up", "--roster", str(roster), "--log-format", log_format]
    return UNIT.format(
        roster=roster,
        workdir=_systemd_path(roster.parent),
        env_file=_systemd_path(env_file()),
        exec_start=" ".join(_systemd_quote(arg) for arg in argv),
        stop_timeout=STOP_TIMEOUT_S,
    )


def install(roster: Path, name: str, butler_command: Path) -> Path:
    """Write the unit file for ``roster``; return its path. An existing one is replaced."""
    if not UNIT_NAME.match(name):
        raise UserError(f"--name: expected butler or butler-SOMETHING (lower-case), found {name!r}")
    roster = roster.expanduser().resolve()
    if not any(roster.glob("*/butler.toml")):
        raise UserError(f"{roster}: no butler folders (sub-folders holding butler.toml)")
    path = unit_folder() / f"{name}.service"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(unit_text(roster, butler_command), encoding="utf-8")
    return path


def remove(name: str) -> Path:
    """Delete the unit file; return where it was."""
    path = unit_folder() / f"{name}.service"
    if not path.is_file():
        raise UserError(f"{path}: no such unit; expected one `butler service install` wrote")
    path.unlink()
    return path


def _systemd_quote(arg: str) -> str:
    # systemd splits ExecStart like a shell, and expands % specifiers and $ variables.
    return shlex.quote(arg.replace("%", "%%").replace("$", "$$"))


def _systemd_path(path: Path) -> str:
    return str(path).replace("%", "%%")
