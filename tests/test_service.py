"""``butler service install``: a systemd unit for ``butler up`` that systemd accepts, written
only where a systemd would run it, starting ``butler up`` as the person ran the install.

This machine runs no systemd (a container): a test that needs a user manager to answer
puts a ``systemctl`` on PATH that answers as a running one does (exit 0); the unit it
writes is checked by the genuine ``systemd-analyze verify``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO, require_tool, write_butler

BUTLER = Path(sys.executable).with_name("butler")


def butler(
    *args: str, config_home: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUTLER), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "XDG_CONFIG_HOME": str(config_home), **(env or {})},
        timeout=60,
    )


def answering_systemctl(folder: Path) -> dict[str, str]:
    """An environment whose ``systemctl`` answers as a running user manager does."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "systemctl"
    fake.write_text("#!/bin/sh\n[ \"$*\" = '--user show-environment' ] && exit 0\nexit 1\n")
    fake.chmod(0o755)
    return {"PATH": f"{folder}:{os.environ['PATH']}"}


def verified(unit: Path) -> subprocess.CompletedProcess[str]:
    # System mode: a user manager needs a login session, which a test has not; the
    # unit's syntax, its ExecStart being executable and its targets are checked alike.
    analyze = require_tool("systemd-analyze")
    return subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)


def test_install_writes_a_unit_systemd_accepts_for_butler_up(tmp_path):
    roster = tmp_path / "my butlers %h $HOME"  # systemd would expand both, unquoted
    write_butler(roster, "health", port=8101)
    env = {**answering_systemctl(tmp_path / "bin"), "BUTLER_DATA_DIR": str(tmp_path / "data %i")}
    install = ("service", "install", "--roster", str(roster))
    done = butler(*install, config_home=tmp_path / "cfg", env=env)
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "butler.service"
    assert done.stdout.startswith(f"wrote {unit}\n")
    assert "systemctl --user daemon-reload && systemctl --user enable --now butler" in done.stdout
    text = unit.read_text()
    lines = dict(line.split("=", 1) for line in text.splitlines() if "=" in line[:20])
    # As this user ran it: root says --allow-root, the data folder is the same.
    assert lines["ExecStart"] == (
        f"{BUTLER} up --roster '{tmp_path}/my butlers %%h $$HOME' --log-format json --allow-root"
    )
    environment = [line for line in text.splitlines() if line.startswith("Environment=")]
    keys = tmp_path / "cfg" / "butler" / "service.env"
    assert environment == [
        f'Environment="BUTLER_DATA_DIR={tmp_path}/data %%i"',
        f'Environment="BUTLER_CREDENTIALS_FROM={keys} (then: systemctl --user restart butler)"',
    ]
    assert lines["EnvironmentFile"] == f"-{keys}"
    # The file the unit names exists, the owner's alone, holding no value yet.
    assert keys.stat().st_mode & 0o777 == 0o600
    assert all(line.startswith("#") for line in keys.read_text().splitlines())
    assert lines["KillSignal"] == "SIGTERM"
    assert int(lines["TimeoutStopSec"]) > 35  # the daemon's drain (30 s) and callers (5 s)
    assert "ANTHROPIC_API_KEY=" not in text.replace("ANTHROPIC_API_KEY=...", "")
    checked = verified(unit)
    assert checked.returncode == 0, checked.stderr


def test_remove_deletes_it_and_mistakes_are_one_line(tmp_path):
    roster = tmp_path / "roster"
    write_butler(roster, "health", port=8101)
    home = tmp_path / "cfg"
    env = answering_systemctl(tmp_path / "bin")
    install = ("service", "install", "-r", str(roster), "--name", "butler-home")
    named = butler(*install, config_home=home, env=env)
    assert named.returncode == 0, named.stderr
    assert butler("service", "remove", "--name", "butler-home", config_home=home).returncode == 0
    unit = home / "systemd" / "user" / "butler-home.service"
    assert not unit.exists()
    again = butler("service", "remove", "--name", "butler-home", config_home=home)
    assert again.returncode == 2
    assert again.stderr == (
        f"butler: error: {unit}: no such unit; expected one `butler service install` wrote\n"
    )
    empty = butler("service", "install", "-r", str(tmp_path / "nothing"), config_home=home, env=env)
    assert empty.returncode == 2
    assert "no butler folders" in empty.stderr
    bad = butler(
        "service", "install", "-r", str(roster), "--name", "My Unit", config_home=home, env=env
    )
    assert bad.returncode == 2 and "--name: expected butler or butler-SOMETHING" in bad.stderr


def test_without_a_systemd_to_run_it_nothing_is_written_and_butler_up_is_offered(tmp_path):
    roster = tmp_path / "roster"
    write_butler(roster, "health", port=8101)
    home = tmp_path / "cfg"
    done = butler("service", "install", "-r", str(roster), config_home=home)  # no systemd here
    assert done.returncode == 2
    assert done.stderr.startswith(
        "butler: error: no systemd user manager answers here (systemctl --user: "
    )
    assert done.stderr.endswith(
        f"so nothing was written; run the roster in a terminal (or tmux) with: "
        f"butler up --roster {roster} --allow-root\n"
    )
    assert not home.exists()  # not the unit, not the environment file
    printed = butler("service", "install", "-r", str(roster), "--print", config_home=home)
    assert printed.returncode == 0 and printed.stdout.startswith("# Written by")
    assert not home.exists()
