"""``butler service install``: a systemd user unit for ``butler up`` that systemd accepts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO, require_tool, write_butler

BUTLER = Path(sys.executable).with_name("butler")


def butler(*args: str, config_home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BUTLER), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "XDG_CONFIG_HOME": str(config_home)},
        timeout=60,
    )


def verified(unit: Path) -> subprocess.CompletedProcess[str]:
    # System mode: a user manager needs a login session, which a test has not; the
    # unit's syntax, its ExecStart being executable and its targets are checked alike.
    analyze = require_tool("systemd-analyze")
    return subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)


def test_install_writes_a_unit_systemd_accepts_for_butler_up(tmp_path):
    roster = tmp_path / "my butlers %h $HOME"  # systemd would expand both, unquoted
    write_butler(roster, "health", port=8101)
    done = butler("service", "install", "--roster", str(roster), config_home=tmp_path / "cfg")
    assert done.returncode == 0, done.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "butler.service"
    assert done.stdout.startswith(f"wrote {unit}\n")
    assert "systemctl --user daemon-reload && systemctl --user enable --now butler" in done.stdout
    text = unit.read_text()
    lines = dict(line.split("=", 1) for line in text.splitlines() if "=" in line[:20])
    assert lines["ExecStart"] == (
        f"{BUTLER} up --roster '{tmp_path}/my butlers %%h $$HOME' --log-format json"
    )
    assert lines["EnvironmentFile"] == f"-{tmp_path}/cfg/butler/service.env"
    assert lines["KillSignal"] == "SIGTERM"
    assert int(lines["TimeoutStopSec"]) > 35  # the daemon's drain (30 s) and callers (5 s)
    assert "ANTHROPIC_API_KEY=" not in text.replace("ANTHROPIC_API_KEY=...", "")
    checked = verified(unit)
    assert checked.returncode == 0, checked.stderr


def test_remove_deletes_it_and_mistakes_are_one_line(tmp_path):
    roster = tmp_path / "roster"
    write_butler(roster, "health", port=8101)
    home = tmp_path / "cfg"
    install = ("service", "install", "-r", str(roster), "--name", "butler-home")
    named = butler(*install, config_home=home)
    assert named.returncode == 0, named.stderr
    assert butler("service", "remove", "--name", "butler-home", config_home=home).returncode == 0
    unit = home / "systemd" / "user" / "butler-home.service"
    assert not unit.exists()
    again = butler("service", "remove", "--name", "butler-home", config_home=home)
    assert again.returncode == 2
    assert again.stderr == (
        f"butler: error: {unit}: no such unit; expected one `butler service install` wrote\n"
    )
    empty = butler("service", "install", "-r", str(tmp_path / "nothing"), config_home=home)
    assert empty.returncode == 2
    assert "no butler folders" in empty.stderr
    bad = butler("service", "install", "-r", str(roster), "--name", "My Unit", config_home=home)
    assert bad.returncode == 2 and "--name: expected butler or butler-SOMETHING" in bad.stderr
