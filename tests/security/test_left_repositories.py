"""What a session leaves in its butler folder never runs as the owner: a repository it
made there (at any depth, as a ``.git`` folder, a ``.git`` file or a bare repository) is
disarmed when its jail ends, before the owner's own git can obey it, and the owner is
told on the session's row, its page and the daemon's log.

Before, a session ran ``git init reports`` in its butler folder with ``core.fsmonitor``
set to a script; the owner's ``git status`` in ``reports/`` ran it outside the jail, and
it read the owner token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.builders import conftest as builder_fixtures
from tests.helpers import TEST_TOKEN, butler_client, require_jail
from tests.sandbox.conftest import Jailed
from tests.security.conftest import attacked_butler, owners_git

pytestmark = pytest.mark.slow  # a real daemon, real jails, the genuine git

repo = builder_fixtures.repo


@pytest.fixture
def victim(tmp_path: Path, schema_name: str) -> Iterator[Jailed]:
    require_jail()
    daemon, jailed = attacked_butler(tmp_path, schema_name)
    token = jailed.data / "butlers" / "victim" / "token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(TEST_TOKEN)  # the owner token, where the daemon keeps it
    with daemon:
        yield jailed


def planting(folder: Path, steal: str) -> str:
    """The session's script: repositories of every kind, each set to run ``steal``."""
    return f"""
set -e
cd {folder}
arm() {{ git -C "$1" config core.fsmonitor "{steal}; false"; }}
git init -q reports && arm reports
mkdir -p deep/er/still && git init -q deep/er/still && arm deep/er/still
git init -q --bare .hidden/notes.git && arm .hidden/notes.git
mkdir notes && printf 'gitdir: {folder}/.hidden/notes.git\\n' > notes/.git
git -C notes config core.worktree {folder}/notes
git init -q --bare archive && git -C archive config core.pager "{steal}"
echo PLANTED
"""


async def test_a_repository_a_session_made_in_its_butler_folder_never_runs_as_the_owner(
    victim: Jailed, tmp_path: Path
):
    stolen = tmp_path / "stolen"
    token = victim.data / "butlers" / "victim" / "token"
    result = await victim.run({"sh": planting(victim.folder, f"cat {token} >> {stolen}")})
    said = json.loads(result["output"])["sh"]
    assert "PLANTED" in said["out"], said  # the jail let the session make them all
    for where in ("reports", "deep/er/still", "notes"):
        owners_git(victim.folder / where, "status")  # the owner, later, with their own git
    assert not stolen.exists(), f"the owner's git ran the session's script: {stolen.read_text()}"
    for where in ("reports", "deep/er/still", "notes", "archive", ".hidden/notes.git"):
        found = owners_git(victim.folder / where, "rev-parse", "--absolute-git-dir")
        assert found.returncode != 0, f"{where} is still a repository: {found.stdout}"
    # Nothing was deleted: the repository is there, its HEAD renamed beside it.
    assert (victim.folder / "reports" / ".git" / "HEAD.disarmed").is_file()
    assert (victim.folder / "reports" / ".git" / "config").is_file()
    # The owner is told: on the session's row, its page, the daemon's log.
    row = await victim.row(result["session_id"])
    disarmed = {Path(d["path"]).relative_to(victim.folder).as_posix(): d["now"]
                for d in row["metadata"]["sandbox"]["disarmed"]}  # fmt: skip
    assert disarmed == {
        "reports/.git/HEAD": "HEAD.disarmed",
        "deep/er/still/.git/HEAD": "HEAD.disarmed",
        ".hidden/notes.git/HEAD": "HEAD.disarmed",
        "notes/.git": ".git.disarmed",
        "archive/HEAD": "HEAD.disarmed",
    }
    bearer = {"Authorization": f"Bearer {TEST_TOKEN}"}
    page = httpx2.get(f"{victim.url}/sessions/{result['session_id']}", headers=bearer)
    assert "Repositories left behind" in page.text and "reports/.git/HEAD" in page.text
    listing = httpx2.get(f"{victim.url}/api/sessions", headers=bearer).json()["html"]
    assert "left a repository" in listing
    assert f"{victim.folder}/reports/.git/HEAD: renamed to HEAD.disarmed" in victim.daemon.logs()


async def test_what_was_left_while_no_daemon_looked_is_disarmed_at_the_next_start(
    victim: Jailed, tmp_path: Path
):
    """A daemon that died before its jails' ends were looked at, or a builder that ended
    unseen: the next start looks, before any session runs."""
    victim.daemon.stop()
    stolen = tmp_path / "stolen"
    owners_git(victim.folder, "init", "-q", "reports")  # as a jail of the old daemon left it
    owners_git(victim.folder / "reports", "config", "core.fsmonitor", f"touch {stolen}; false")
    victim.daemon.start()
    owners_git(victim.folder / "reports", "status")
    assert not stolen.exists()
    assert "left before this start" in victim.daemon.logs()


async def test_a_repository_a_builder_made_in_its_worktree_is_disarmed_and_its_own_kept(
    victim: Jailed, repo: Path, tmp_path: Path
):
    """The owner runs git in a builder's worktree to take its work; a repository the
    builder made inside it is no way to run as the owner either."""
    stolen = tmp_path / "stolen"
    script = (
        f"cd {repo}/.builders/*/ && git init -q vendored && "
        f'git -C vendored config core.fsmonitor "touch {stolen}; false" && echo PLANTED'
    )
    args = {"repo": str(repo), "task": json.dumps({"sh": script}), "headless": True}
    async with butler_client(f"{victim.url}/mcp", timeout=180) as owner:
        builder = (await owner.call_tool("builder_spawn", args)).structured_content
    assert "PLANTED" in json.loads(builder["result"]["output"])["sh"]["out"], builder
    worktree = Path(builder["worktree"])
    owners_git(worktree / "vendored", "status")
    assert not stolen.exists()
    assert owners_git(worktree, "status").returncode == 0  # its own pointer was kept
    row = await victim.row(builder["session_id"])
    assert [d["path"] for d in row["metadata"]["sandbox"]["disarmed"]] == [
        str(worktree / "vendored" / ".git" / "HEAD")
    ]
