"""``butler service install``: the roster as a systemd service.

A user unit runs ``butler up`` for one roster folder, as its owner, restarted
when it fails, started at login (or at boot with ``loginctl enable-linger``);
with ``--system``, root's unit in ``/etc/systemd/system``, started at boot.
Before anything is written, the systemd that would run it must answer: where
none does (a container, a machine without systemd, a ``su`` shell with no
user manager), the person is told so, and what works there instead.

The unit starts ``butler up`` as the person ran the install: as root with
``--allow-root``, with the same ``BUTLER_DATA_DIR``. Variables such as
``ANTHROPIC_API_KEY`` or ``DATABASE_URL`` come from an environment file the
install creates (mode 0600) and the unit names, never from the unit, which
anyone on the machine may read. systemd stops it with SIGTERM and waits longer
than the daemon's drain (30 s for sessions, 5 s for their callers), so running
sessions end as ``cancelled``, never killed unrecorded.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
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
{environment}ExecStart={exec_start}
Restart=on-failure
RestartSec=5
KillMode=mixed
KillSignal=SIGTERM
TimeoutStopSec={stop_timeout}

[Install]
WantedBy={wanted_by}
"""
#: The environment file the install creates when there is none (its values the owner's).
ENV_TEMPLATE = """\
# Keys and settings for butler up under systemd, one KEY=value per line (this file is
# mode 0600; the unit, readable by anyone, only names it). After a change: {restart}
# ANTHROPIC_API_KEY=
# DATABASE_URL=postgresql://localhost/butler
"""
#: Variables of the installing shell the unit passes on, so it starts as they ran it.
PASSED_ON = ("BUTLER_DATA_DIR",)
SYSTEM_UNITS = Path("/etc/systemd/system")


@dataclass(frozen=True)
class Scope:
    """Whose systemd runs the unit: the user's own manager, or the system's (``--system``)."""

    system: bool = False

    @property
    def systemctl(self) -> str:
        return "systemctl" if self.system else "systemctl --user"

    def unit_folder(self) -> Path:
        return SYSTEM_UNITS if self.system else unit_folder()

    def restart(self, name: str) -> str:
        return f"{self.systemctl} restart {name}"


def unit_folder() -> Path:
    """Where systemd looks for this user's units."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def env_file() -> Path:
    """The optional environment file the unit reads."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "butler" / "service.env"


def unit_text(
    roster: Path,
    butler_command: Path,
    log_format: str = "json",
    *,
    name: str = "butler",
    scope: Scope = Scope(),
) -> str:
    """The unit running ``butler up`` for ``roster`` (an absolute path), as this user runs it."""
    argv = [str(butler_command), "up", "--roster", str(roster), "--log-format", log_format]
    if os.geteuid() == 0:
        argv.append("--allow-root")  # root meant it: it is installing root's own service
    passed = {key: os.environ[key] for key in PASSED_ON if os.environ.get(key)}
    keys_from = f"{env_file()} (then: {scope.restart(name)})"
    passed["BUTLER_CREDENTIALS_FROM"] = keys_from
    environment = "".join(
        f"Environment={_environment_quote(f'{key}={value}')}\n" for key, value in passed.items()
    )
    return UNIT.format(
        roster=roster,
        workdir=_systemd_path(roster.parent),
        env_file=_systemd_path(env_file()),
        environment=environment,
        exec_start=" ".join(_systemd_quote(arg) for arg in argv),
        stop_timeout=STOP_TIMEOUT_S,
        wanted_by="multi-user.target" if scope.system else "default.target",
    )


def check_name(name: str) -> None:
    """One line when ``name`` is no unit name butler writes."""
    if not UNIT_NAME.match(name):
        raise UserError(f"--name: expected butler or butler-SOMETHING (lower-case), found {name!r}")


def roster_folder(roster: Path) -> Path:
    """The roster as an absolute path; one line when it holds no butler."""
    roster = roster.expanduser().resolve()
    if not any(roster.glob("*/butler.toml")):
        raise UserError(f"{roster}: no butler folders (sub-folders holding butler.toml)")
    return roster


def install(roster: Path, name: str, butler_command: Path, scope: Scope = Scope()) -> Path:
    """Write the unit file for ``roster``; return its path. An existing one is replaced.

    The environment file it names is created (empty but for comments, mode
    0600) when there is none; one that exists is left as it is.
    """
    check_name(name)
    roster = roster_folder(roster)
    refuse_without_systemd(scope, roster)
    keys = env_file()
    keys.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        fd = os.open(keys, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(ENV_TEMPLATE.format(restart=scope.restart(name)))
    path = scope.unit_folder() / f"{name}.service"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(unit_text(roster, butler_command, name=name, scope=scope), encoding="utf-8")
    return path


def manager_answers(scope: Scope) -> str | None:
    """None when the systemd that would run the unit answers; else what it said."""
    systemctl = shutil.which("systemctl")
    if systemctl is None:
        return "systemctl is not installed"
    argv = [systemctl, *([] if scope.system else ["--user"]), "show-environment"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except subprocess.TimeoutExpired:
        return f"{scope.systemctl} did not answer within 10 s"
    if done.returncode == 0:
        return None
    said = (done.stderr or done.stdout).strip().splitlines()
    return said[-1] if said else f"{scope.systemctl} exited {done.returncode}"


def refuse_without_systemd(scope: Scope, roster: Path) -> None:
    """One line, before anything is written, when no systemd here would run the unit.

    It names what works instead: root's system unit when the system's systemd
    runs, else ``butler up`` in a terminal.
    """
    if scope.system and os.geteuid() != 0:
        raise UserError(f"--system writes to {SYSTEM_UNITS}: run it as root (sudo)")
    trouble = manager_answers(scope)
    if trouble is None:
        return
    up = f"butler up --roster {roster}" + (" --allow-root" if os.geteuid() == 0 else "")
    instead = f"run the roster in a terminal (or tmux) with: {up}"
    if not scope.system and os.geteuid() == 0 and manager_answers(Scope(system=True)) is None:
        instead = f"install a system unit instead: butler service install --system; or {instead}"
    which = "the system's systemd" if scope.system else "no systemd user manager"
    raise UserError(
        f"{which} answers here ({scope.systemctl}: {trouble}), so nothing was written; {instead}"
    )


def remove(name: str, scope: Scope = Scope()) -> Path:
    """Delete the unit file; return where it was."""
    path = scope.unit_folder() / f"{name}.service"
    if not path.is_file():
        raise UserError(f"{path}: no such unit; expected one `butler service install` wrote")
    path.unlink()
    return path


def _systemd_quote(arg: str) -> str:
    # systemd splits ExecStart like a shell, and expands % specifiers and $ variables.
    return shlex.quote(arg.replace("%", "%%").replace("$", "$$"))


def _environment_quote(assignment: str) -> str:
    # Environment= expands % specifiers but no $ variables; quotes keep spaces in.
    escaped = assignment.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{escaped}"'


def _systemd_path(path: Path) -> str:
    return str(path).replace("%", "%%")
