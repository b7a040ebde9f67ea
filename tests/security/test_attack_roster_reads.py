"""ATTACK: what a session makes the daemon read or obey in its butler folder and roster.

1. Includes are resolved below the roster folder, not below the butler folder. A session
   writes its own CLAUDE.md (by design) with ``<!-- @include other/notes.md -->`` or
   ``<!-- @include .git/config -->``: the daemon, outside the jail, reads another butler's
   folder (which this session's jail does not show) or the roster repository's git config
   (remote URLs with credentials) into the next session's system prompt.
2. A butler folder inside a repository, or in none, has no ``.git`` of its own; the jail
   protects a ``.git`` only if one exists when it starts. The session makes one: the
   owner's own ``git status`` in the butler folder then runs its ``core.fsmonitor``, and
   ``[butler.builders] repos`` unset now means the butler folder, a repository whose
   config and hooks the session wrote.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import DaemonProcess, free_port, require_jail, write_butler
from tests.sandbox.conftest import Jailed

pytestmark = pytest.mark.slow

ATTACKER = Path(__file__).with_name("attacker.py")
SECRET = "other-butlers-private-note-5e1f"
REMOTE = "https://owner:ghp_SECRETPAT0123456789@github.com/owner/roster.git"


@pytest.fixture
def butler(tmp_path: Path, schema_name: str) -> Iterator[Jailed]:
    require_jail()
    roster = tmp_path / "roster"
    (roster / "shared").mkdir(parents=True)
    # The owner keeps the roster in git, with a remote that carries a token.
    subprocess.run(["git", "init", "-q", str(roster)], check=True)
    subprocess.run(["git", "-C", str(roster), "remote", "add", "origin", REMOTE], check=True)
    other = roster / "other"
    other.mkdir()
    (other / "notes.md").write_text(f"{SECRET}\n")
    runtime = {
        "type": "command",
        "command": [
            "/usr/bin/python3",
            "-I",
            str(roster / "victim" / "attacker.py"),
            "{prompt_file}",
            "{mcp_config}",
            "{system_prompt_file}",
        ],
    }
    port = free_port()
    folder = write_butler(roster, "victim", port=port, schema=schema_name, runtime=runtime)
    shutil.copy(ATTACKER, folder / "attacker.py")
    env = {"BUTLER_DATA_DIR": str(tmp_path / "data"), "BUTLER_SANDBOX": "bwrap"}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        yield Jailed(daemon, folder, tmp_path / "data", schema_name)


async def test_an_include_reads_what_the_jail_hides(butler: Jailed):
    roster = butler.folder.parent
    sh = (
        f"cat {roster}/other/notes.md 2>&1; cat {roster}/.git/config 2>&1; "
        "printf 'x\\n<!-- @include other/notes.md -->\\n<!-- @include .git/config -->\\n'"
        " >> CLAUDE.md"
    )
    first = json.loads((await butler.run({"sh": sh}))["output"])
    assert SECRET not in first["sh"]["out"] and "ghp_" not in first["sh"]["out"]  # jail hides
    second = await butler.run({})
    system = json.loads(second["output"])["system"]
    assert SECRET not in system, "another butler's folder reached this session"
    assert "ghp_SECRET" not in system, "the roster's git config reached this session"


async def test_a_session_made_git_folder_is_obeyed_by_the_owners_git(
    butler: Jailed, tmp_path: Path
):
    marker = tmp_path / "fsmonitor-ran"
    sh = f"git init -q . && git config core.fsmonitor 'id > {marker}; false' && echo made"
    done = json.loads((await butler.run({"sh": sh}))["output"])
    assert done["sh"]["rc"] == 0  # the session made its butler folder a repository
    subprocess.run(["git", "status", "--short"], cwd=butler.folder, capture_output=True)
    assert not marker.exists(), f"owner's git ran the session's fsmonitor: {marker.read_text()}"


def test_a_session_made_git_folder_becomes_the_default_repository(tmp_path: Path):
    """``session_repos`` with ``repos`` unset: the nearest ``.git``, which a session can make."""
    from butler.builders.git import top_of

    roster = tmp_path / "roster"
    folder = roster / "victim"
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(roster)], check=True)
    assert top_of(folder) == roster  # the owner's roster repository
    subprocess.run(["git", "init", "-q", str(folder)], check=True)  # what the session did
    assert top_of(folder) == roster, "the session chose the repository builders may use"
