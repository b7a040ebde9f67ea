"""What a session can make the daemon read or obey through its butler folder and roster.

1. Includes were resolved below the whole roster: a session wrote
   ``<!-- @include other/notes.md -->`` or ``<!-- @include .git/config -->`` to its own
   CLAUDE.md and the daemon, outside the jail, read another butler's folder or the
   roster's git config (a remote URL with a token) into the next system prompt. Now
   an include names the roster's ``shared/`` or the butler's own folder, no dot names.
2. A butler folder with no ``.git`` of its own: the session made one (``git init .``
   with ``core.fsmonitor``), and the owner's ``git status`` there ran it; with
   ``[butler.builders] repos`` unset it also became the repository builders may use.
   Now the jail holds an empty read-only ``.git`` there, and the default repository is
   fixed when the daemon starts.
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

SECRET = "other-butlers-private-note-5e1f"
REMOTE = "https://owner:ghp_SECRETPAT0123456789@github.com/owner/roster.git"


@pytest.fixture
def butler(tmp_path: Path, schema_name: str) -> Iterator[Jailed]:
    require_jail()
    roster = tmp_path / "roster"
    roster.mkdir()
    # The owner keeps the roster in git, with a remote that carries a token.
    owners_git(roster, "init", "-q")
    owners_git(roster, "remote", "add", "origin", REMOTE)
    (roster / "other").mkdir()
    (roster / "other" / "notes.md").write_text(f"{SECRET}\n")
    daemon, jailed = attacked_butler(tmp_path, schema_name, timeout_s=60)
    with daemon:
        yield jailed


async def test_an_include_never_reads_another_butlers_folder_or_the_rosters_git(
    butler: Jailed,
):
    roster = butler.folder.parent
    sh = (
        f"cat {roster}/other/notes.md 2>&1; cat {roster}/.git/config 2>&1; "
        "printf 'x\\n<!-- @include other/notes.md -->\\n<!-- @include .git/config -->\\n'"
        " >> CLAUDE.md"
    )
    first = json.loads((await butler.run({"sh": sh}))["output"])
    assert SECRET not in first["sh"]["out"] and "ghp_" not in first["sh"]["out"]  # jail hides
    second = await butler.run({})
    assert not second["success"] and "include 'other/notes.md' refused" in second["error"]
    assert SECRET not in json.dumps(second) and "ghp_SECRET" not in json.dumps(second)


async def test_a_session_cannot_make_its_butler_folder_a_repository(butler: Jailed, tmp_path: Path):
    marker = tmp_path / "fsmonitor-ran"
    sh = f"git init -q . && git config core.fsmonitor 'id > {marker}; false' && echo made"
    done = json.loads((await butler.run({"sh": sh}))["output"])
    assert done["sh"]["rc"] != 0 and "made" not in done["sh"]["out"], done
    owners_git(butler.folder, "status", "--short")
    assert not marker.exists(), f"owner's git ran the session's fsmonitor: {marker.read_text()}"
    # The roster's repository stays the one builders may use, as when the daemon started.
    plan = {"mcp": [["builder_spawn", {"repo": str(butler.folder), "task": "x"}]]}
    said = json.loads((await butler.run(plan))["output"])["mcp"][0]
    assert "is not one a session may use" in said and f"(now: {butler.folder.parent})" in said


async def test_the_default_repository_is_the_one_found_when_the_daemon_started(
    butler: Jailed,
):
    """``repos`` unset: the nearest ``.git`` above the butler folder, asked once. A
    ``.git`` that appears later (made by whoever could) changes nothing."""
    owners_git(butler.folder, "init", "-q")
    owners_git(butler.folder, "commit", "-q", "--allow-empty", "-m", "x")
    plan = {"mcp": [["builder_spawn", {"repo": str(butler.folder), "task": "x"}]]}
    said = json.loads((await butler.run(plan))["output"])["mcp"][0]
    assert "is not one a session may use" in said, said
