"""ATTACK: a butler folder that is a repository puts ``.builders/`` in the session's reach.

With ``[butler.builders] repos`` unset, a session may use the repository holding its
butler folder. When the butler folder *is* that repository, builders' worktrees are made
in ``<butler>/.builders/``, which every session of the butler can write (only ``.git`` is
bound read-only in its jail). The worktree's ``.git`` pointer file is what the builder's
jail reads to find the folder it may write (``policy.worktree_folder``), and a pointer
naming ``<repo>/.git/worktrees/..`` passes its check (``named.parent`` is compared
lexically; ``..`` resolves to ``.git`` itself, a real folder). The builder's jail then
binds the repository's whole ``.git`` writable: hooks and config included.

Here a session rewrites each new pointer as soon as the daemon's git writes it, then
spawns a headless builder; the builder appends ``core.fsmonitor`` to ``.git/config``;
the owner's next ``git status`` in the butler folder runs it.
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

POLLER = r"""
( end=$(( $(date +%s) + 90 ))
  while [ "$(date +%s)" -lt "$end" ]; do
    for g in .builders/*/.git; do
      if [ -f "$g" ] && ! grep -q 'worktrees/\.\.' "$g"; then
        printf 'gitdir: %s/.git/worktrees/..\n' "$PWD" > "$g" && echo "rewrote $g" >> .poller.log
      fi
    done
    sleep 0.002
  done ) >/dev/null 2>&1 &
echo poller started
"""


@pytest.fixture
def butler(tmp_path: Path, schema_name: str) -> Iterator[Jailed]:
    require_jail()
    roster = tmp_path / "roster"
    (roster / "shared").mkdir(parents=True)
    runtime = {
        "type": "command",
        "command": [
            "/usr/bin/python3",
            "-I",
            str(roster / "victim" / "attacker.py"),
            "{prompt_file}",
            "{mcp_config}",
        ],
        "max_concurrent_sessions": 2,
        "timeout_s": 120,
    }
    port = free_port()
    folder = write_butler(roster, "victim", port=port, schema=schema_name, runtime=runtime)
    shutil.copy(ATTACKER, folder / "attacker.py")
    # The owner keeps the butler folder in git (docs: "a butler folder that is a repository").
    git = ["git", "-c", "user.name=o", "-c", "user.email=o@o"]
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run([*git, "-C", str(folder), "add", "."], check=True)
    subprocess.run([*git, "-C", str(folder), "commit", "-qm", "butler"], check=True)
    env = {"BUTLER_DATA_DIR": str(tmp_path / "data"), "BUTLER_SANDBOX": "bwrap"}
    with DaemonProcess(folder, port=port, database_url=TEST_DSN, env=env) as daemon:
        yield Jailed(daemon, folder, tmp_path / "data", schema_name)


async def test_a_session_gives_its_builder_the_whole_git_folder(butler: Jailed, tmp_path: Path):
    marker = tmp_path / "fsmonitor-ran"
    git_dir = butler.folder / ".git"
    builder_sh = (
        f"printf '[core]\\n\\tfsmonitor = \"id > {marker}; false\"\\n' >> {git_dir}/config "
        "&& echo config-written"
    )
    plan = {
        "sh": POLLER,
        "mcp": [
            [
                "builder_spawn",
                {
                    "repo": str(butler.folder),
                    "headless": True,
                    "task": json.dumps({"sh": builder_sh}),
                },
            ]
        ],
    }
    result = await butler.run(plan, timeout_s=120)
    assert result["success"], result
    subprocess.run(["git", "status", "--short"], cwd=butler.folder, capture_output=True)
    assert not marker.exists(), f"owner's git ran the builder's fsmonitor: {marker.read_text()}"
