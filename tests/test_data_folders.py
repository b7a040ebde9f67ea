"""Each butler install keeps its own data folder (token, runtime homes), even with one name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from butler.paths import DataOwner, butler_dir
from tests.helpers import REPO, free_port, write_butler

BUTLER = Path(sys.executable).with_name("butler")


def token_of(folder: Path) -> str:
    """What ``butler token -c FOLDER`` prints, with no BUTLER_TOKEN to override the file."""
    env = {k: v for k, v in os.environ.items() if k != "BUTLER_TOKEN"}
    done = subprocess.run(
        [str(BUTLER), "token", "-c", str(folder)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_two_installs_named_health_get_their_own_token_and_homes(tmp_path):
    first = write_butler(tmp_path / "checkout-a", "health", port=free_port())
    second = write_butler(tmp_path / "checkout-b", "health", port=free_port())
    tokens = token_of(first), token_of(second)
    assert tokens[0] != tokens[1]
    assert (token_of(first), token_of(second)) == tokens  # each keeps its own
    folders = butler_dir(DataOwner("health", first)), butler_dir(DataOwner("health", second))
    assert folders[0] != folders[1]
    assert (folders[0] / "token").read_text().strip() == tokens[0]
    assert (folders[1] / "token").read_text().strip() == tokens[1]


def test_a_data_folder_made_before_installs_were_told_apart_keeps_its_token(
    tmp_path, _isolated_data_dir
):
    # As an older butler left it: butlers/health/ with a token and no record of whose it is.
    legacy = _isolated_data_dir / "butlers" / "health"
    legacy.mkdir(parents=True, mode=0o700)
    (legacy / "token").write_text("old-token-of-health-0123456789-abcdefghijklm\n")
    (legacy / "token").chmod(0o600)
    (legacy / "home").mkdir()  # where its owner logged a CLI in
    existing = write_butler(tmp_path / "roster", "health", port=free_port())
    assert token_of(existing) == "old-token-of-health-0123456789-abcdefghijklm"
    assert butler_dir(DataOwner("health", existing)) == legacy
    # Another install of the same name, started after, does not get it.
    newcomer = write_butler(tmp_path / "elsewhere", "health", port=free_port())
    assert token_of(newcomer) != token_of(existing)
    assert not (butler_dir(DataOwner("health", newcomer)) / "home").exists()


def test_a_moved_butler_folder_keeps_its_data_folder(tmp_path):
    before = write_butler(tmp_path / "old-roster", "health", port=free_port())
    token = token_of(before)
    after = tmp_path / "new-roster" / "health"
    after.parent.mkdir()
    before.rename(after)
    assert token_of(after) == token


def test_two_rosters_dashboards_keep_their_own_tokens(tmp_path, monkeypatch):
    from butler.dashboard.standalone import dashboard_owner
    from butler.security.owner_token import owner_token

    monkeypatch.delenv("BUTLER_TOKEN")  # the token files are what is compared
    first, second = tmp_path / "home-roster", tmp_path / "work-roster"
    first.mkdir()
    second.mkdir()
    tokens = owner_token(dashboard_owner(first)), owner_token(dashboard_owner(second))
    assert tokens[0] != tokens[1]
    assert (owner_token(dashboard_owner(first)), owner_token(dashboard_owner(second))) == tokens
