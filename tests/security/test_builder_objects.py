"""A builder cannot send its repository's objects elsewhere, and a repository an earlier
builder damaged is refused in one line.

Before, a builder's jail had ``.git/objects`` writable whole: a builder linked each
``objects/<xx>`` folder git had not made yet to a folder outside the repository (here
its butler folder, which sessions write). The owner's next commit wrote its objects
there; once that folder went, HEAD named a commit the repository no longer held and
every later ``builder_spawn`` failed (``not a valid branch point: 'HEAD'``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from butler.builders import git
from butler.errors import UserError
from tests.builders import conftest as builder_fixtures
from tests.helpers import butler_client, require_jail
from tests.sandbox.conftest import Jailed
from tests.security.conftest import attacked_butler, owners_git

pytestmark = pytest.mark.slow

repo = builder_fixtures.repo

#: The builder's script: each folder of ``objects`` git has not made yet linked into
#: ``stash``, and each it made swapped for a link to a copy there.
LINK_MISSING = r"""
objects="{objects}"
rename() {{ python3 -c 'import os, sys; os.rename(*sys.argv[1:])' "$1" "$2" 2>/dev/null; }}
mkdir -p "{stash}"
for a in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do for b in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do
  if [ ! -e "$objects/$a$b" ]; then
    mkdir -p "{stash}/$a$b" && ln -s "{stash}/$a$b" "$objects/$a$b" 2>/dev/null && echo LINKED
  fi
  # A folder git already made, renamed away and replaced by a link too.
  if [ -d "$objects/$a$b" ] && [ ! -L "$objects/$a$b" ] && rename "$objects/$a$b" "{stash}/$a$b.old"
  then
    ln -s "{stash}/$a$b.old" "$objects/$a$b" && echo SWAPPED
  fi
done; done
echo done
"""


@pytest.fixture
def butler(tmp_path: Path, schema_name: str) -> Iterator[Jailed]:
    require_jail()
    daemon, jailed = attacked_butler(tmp_path, schema_name, timeout_s=120)
    with daemon:
        yield jailed


async def spawn(butler: Jailed, repo: Path, plan: dict[str, Any]) -> dict[str, Any]:
    """The owner's headless ``builder_spawn``; its answer (an error's text, if refused)."""
    args = {"repo": str(repo), "task": json.dumps(plan), "headless": True}
    async with butler_client(f"{butler.url}/mcp", timeout=180) as owner:
        answer = await owner.call_tool("builder_spawn", args, raise_on_error=False)
    if answer.is_error:
        return {"error": answer.content[0].text}
    return answer.structured_content


async def test_a_builder_cannot_link_the_objects_folders_elsewhere(butler: Jailed, repo: Path):
    stash = butler.folder / "stash"
    objects = repo / ".git" / "objects"
    script = LINK_MISSING.format(stash=stash, objects=objects)
    first = await spawn(butler, repo, {"sh": script})
    said = json.loads(first["result"]["output"])["sh"]["out"]
    assert "done" in said and "LINKED" not in said and "SWAPPED" not in said, said
    assert not any(p.is_symlink() for p in objects.iterdir())
    # The owner's next commit, with the owner's own git: its objects stay in the repository.
    (repo / "README.md").write_text("# project, edited by the owner\n")
    committed = owners_git(repo, "commit", "-qam", "owner's work")
    assert committed.returncode == 0, committed.stderr
    shutil.rmtree(stash, ignore_errors=True)  # a session cleans its butler folder
    checked = owners_git(repo, "fsck", "--no-dangling")
    assert checked.returncode == 0, checked.stderr
    later = await spawn(butler, repo, {})
    assert later.get("result", {}).get("success"), later


def plant(repo: Path, where: str, tmp_path: Path) -> Path:
    """What an earlier builder left under an older butler: ``where`` linked outside."""
    target = tmp_path / "elsewhere"
    target.mkdir(exist_ok=True)
    path = repo / ".git" / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        shutil.move(path, target / path.name)
    path.symlink_to(target / path.name)
    return path


@pytest.mark.parametrize(
    "where",
    ["objects/ab", "objects/pack", "refs/heads/builder/b9", "logs/refs/heads/main", "worktrees/b1"],
)
async def test_a_repository_a_builder_redirected_is_refused_in_one_line(
    repo: Path, tmp_path: Path, where: str
):
    plant(repo, where, tmp_path)
    with pytest.raises(UserError) as refused:
        await git.repo_root(repo)
    line = str(refused.value)
    assert f".git/{where} is a link" in line and "A damaged repository" in line, line
    assert "\n" not in line
    assert not (repo / ".builders").exists()  # nothing made in it, nothing half used


async def test_a_repository_whose_head_commit_is_gone_is_refused_in_one_line(repo: Path):
    """Objects a builder removed (its store is writable: its commits land there): before,
    the spawn went on and failed half-way with git's ``not a valid branch point``."""
    head = owners_git(repo, "rev-parse", "HEAD").stdout.strip()
    (repo / ".git" / "objects" / head[:2] / head[2:]).unlink()
    with pytest.raises(UserError) as refused:
        await git.repo_root(repo)
    line = str(refused.value)
    assert "HEAD names a commit the repository does not hold" in line and "\n" not in line
