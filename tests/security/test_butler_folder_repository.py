"""A butler folder that is a repository keeps ``.builders/`` out of its sessions' reach.

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
the owner's next ``git status`` in the butler folder runs it. Now a session's jail holds
``.builders/`` read-only, and the builder's jail takes its worktree folder from the
builder's id, never from the pointer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import require_jail
from tests.sandbox.conftest import Jailed
from tests.security.conftest import attacked_butler, owners_git

pytestmark = pytest.mark.slow

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
    daemon, jailed = attacked_butler(tmp_path, schema_name, timeout_s=120)
    # The owner keeps the butler folder in git (docs: "a butler folder that is a repository").
    owners_git(jailed.folder, "init", "-q")
    owners_git(jailed.folder, "add", ".")
    owners_git(jailed.folder, "commit", "-qm", "butler")
    with daemon:
        yield jailed


async def test_a_session_cannot_hand_its_builder_the_whole_git_folder(
    butler: Jailed, tmp_path: Path
):
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
    owners_git(butler.folder, "status", "--short")
    assert not marker.exists(), f"owner's git ran the builder's fsmonitor: {marker.read_text()}"
