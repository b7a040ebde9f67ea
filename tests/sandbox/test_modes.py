"""``[butler.sandbox] mode``: what the daemon says and does with and without bubblewrap."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import get_json
from tests.sandbox.conftest import Jailed, jailed_butler

pytestmark = pytest.mark.slow

#: A PATH on which no bubblewrap can be found, as on a machine without it.
NO_BWRAP = {"PATH": "/nonexistent"}


def test_a_jailed_butler_says_so_in_its_status(jailed: Jailed):
    _, body = get_json(f"{jailed.daemon.url}/api/status")
    assert body["sandbox"] == "bwrap"
    assert "SANDBOX OFF" not in jailed.daemon.logs()


@pytest.mark.parametrize(
    ("extra", "env", "warned"),
    [
        ('\n[butler.sandbox]\nmode = "none"\n', {}, False),
        ("", NO_BWRAP, True),  # auto, on a machine without bubblewrap
    ],
    ids=["mode-none", "auto-without-bwrap"],
)
def test_without_the_jail_status_says_none_and_auto_warns_once(
    tmp_path: Path, schema_name: str, extra: str, env: dict[str, str], warned: bool
):
    daemon, _, _ = jailed_butler(tmp_path, schema_name, extra, {"BUTLER_SANDBOX": "", **env})
    with daemon:
        _, body = get_json(f"{daemon.url}/api/status")
    assert body["sandbox"] == "none"
    assert daemon.logs().count("SANDBOX OFF") == (1 if warned else 0), daemon.logs()


def test_mode_bwrap_refuses_to_start_without_bubblewrap(tmp_path: Path, schema_name: str):
    extra = '\n[butler.sandbox]\nmode = "bwrap"\n'
    daemon, _, _ = jailed_butler(tmp_path, schema_name, extra, {"BUTLER_SANDBOX": "", **NO_BWRAP})
    done = subprocess.run(daemon.argv(), env=daemon.env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if 'mode = "bwrap"' in line]
    assert len(lines) == 1 and "apt-get install bubblewrap" in lines[0], done.stderr
