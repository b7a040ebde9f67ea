"""The owner token: made on first start, 0600, overridable, read by every command by itself."""

from __future__ import annotations

import asyncio
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from butler.client import tool_call
from butler.config import load_config
from butler.errors import ConfigError
from butler.paths import DataOwner
from butler.security.owner_token import owner_token, token_path
from tests.conftest import TEST_DSN
from tests.helpers import REPO, DaemonProcess, get_json


def butler_token(folder: Path) -> str:
    argv = [sys.executable, "-m", "butler.cli", "token", "--config", str(folder)]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=True)
    return done.stdout.strip()


#: Butler installs as their folders name them (the folders need not exist for a token).
TESTER = DataOwner("tester", Path("/srv/roster/tester"))
OTHER = DataOwner("other", Path("/srv/roster/other"))


@pytest.fixture
def no_env_token(monkeypatch):
    monkeypatch.delenv("BUTLER_TOKEN")


def test_first_start_makes_a_private_token_file_and_keeps_it(no_env_token):
    token = owner_token(TESTER)
    path = token_path(TESTER)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == token and len(token) >= 43
    assert owner_token(TESTER) == token  # the same one next time
    assert owner_token(OTHER) != token  # and each butler its own


def test_a_token_file_open_to_others_is_narrowed(no_env_token):
    path = token_path(TESTER)
    parent_mode = stat.S_IMODE(path.parent.stat().st_mode)
    path.write_text("z" * 43 + "\n")
    path.chmod(0o644)
    assert owner_token(TESTER) == "z" * 43
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == parent_mode  # never a parent widened


def test_butler_token_overrides_and_a_weak_one_is_refused(monkeypatch):
    monkeypatch.setenv("BUTLER_TOKEN", "k" * 40)
    assert owner_token(TESTER) == "k" * 40
    assert not token_path(TESTER).exists()
    monkeypatch.setenv("BUTLER_TOKEN", "changeme")
    with pytest.raises(ConfigError, match="BUTLER_TOKEN: expected a token of at least 32"):
        owner_token(TESTER)


@pytest.mark.slow
async def test_the_everyday_path_needs_only_the_token_file(no_env_token, butler_dir):
    """Start a daemon, print the token with `butler token`, and let a command use it alone."""
    port = load_config(butler_dir).butler.port
    with DaemonProcess(butler_dir, port=port, database_url=TEST_DSN, token=None) as daemon:
        token = await asyncio.to_thread(butler_token, butler_dir)
        assert token == token_path(load_config(butler_dir)).read_text().strip()
        # Not a terminal: the logs say how to get the login link, never the token itself.
        assert "butler token --config" in daemon.logs() and token not in daemon.logs()
        assert get_json(f"{daemon.url}/api/status", token=token)[0] == 200
        assert get_json(f"{daemon.url}/api/status", token=None)[0] == 401
        found = await asyncio.to_thread(
            tool_call, load_config(butler_dir), "status", {}, timeout=30
        )
        assert found["butler"] == "tester"
