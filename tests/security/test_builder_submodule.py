"""A builder's nested repository never gets the daemon's git to run its program.

The builder's jail keeps the repository's ``config`` and ``hooks/`` read-only, but its
worktree is its own. A repository made inside the worktree and committed as a gitlink
(a submodule) has a ``.git/config`` the builder wrote, where ``filter.<any>.clean`` names a
program no ``-c`` override can switch off by name. ``git status`` in the worktree (the
daemon's ``is_dirty``, run by ``builder_prune``, and ``git worktree remove`` without
``--force``) recurses into the submodule and runs it. It runs in the daemon's git jail,
which has the repository's whole ``.git`` writable: it plants a hook and ``core.fsmonitor``
there, and the owner's own next ``git status`` / ``git checkout`` runs them, as the owner
(root here). All from a plain session: ``builder_spawn`` + ``builder_prune``. Now the daemon's git
never looks into a submodule, and runs with ``.git`` read-only when it only reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.builders import conftest as builder_fixtures
from tests.helpers import require_jail
from tests.sandbox.conftest import Jailed
from tests.security.conftest import attacked_butler, owners_git

pytestmark = pytest.mark.slow

repo = builder_fixtures.repo

#: What the builder runs in its jail (its cwd is its worktree).
BUILDER_SH = r"""
set -e
REPO=REPOSITORY; cd "$(ls -d $REPO/.builders/*/ | head -1)"
G="git -c user.name=b -c user.email=b@b"
mkdir sub && cd sub && git init -q && echo data > f && echo '* filter=x' > .gitattributes
$G add . && $G commit -qm s
cat > .git/stage2.sh <<SH
#!/bin/sh
printf '#!/bin/sh\nid > MARKERS/hook\n' > $REPO/.git/hooks/post-checkout
chmod +x $REPO/.git/hooks/post-checkout
grep -q MARKERS $REPO/.git/config ||
  printf '[core]\n\tfsmonitor = "id > MARKERS/fsmonitor; false"\n' >> $REPO/.git/config
cat
SH
chmod +x .git/stage2.sh
git config filter.x.clean "$PWD/.git/stage2.sh"
touch -d 2019-01-01 f
cd .. && $G add sub 2>/dev/null && $G commit -qm 'a submodule'
echo planted
"""


@pytest.fixture
def attacked(tmp_path: Path, schema_name: str, repo: Path) -> Iterator[Jailed]:
    require_jail()
    extra = f'\n[butler.builders]\nrepos = ["{repo}"]\n'
    daemon, jailed = attacked_butler(tmp_path, schema_name, extra)
    with daemon:
        yield jailed


async def test_a_builders_submodule_leaves_nothing_for_the_owners_git_to_run(
    attacked: Jailed, repo: Path, tmp_path: Path
):
    markers = tmp_path / "markers"
    markers.mkdir()
    builder_plan = {
        "sh": BUILDER_SH.replace("MARKERS", str(markers)).replace("REPOSITORY", str(repo))
    }
    session_plan = {
        "mcp": [
            [
                "builder_spawn",
                {"repo": str(repo), "task": json.dumps(builder_plan), "headless": True},
            ],
            ["builder_prune", {}],
        ]
    }
    result = await attacked.run(session_plan, timeout_s=240)
    assert result["success"], result
    # The owner, later, in their own checkout, with their own git:
    owners_git(repo, "status", "--short")
    owners_git(repo, "checkout", "-q", "-b", "owner-work")
    ran = sorted(p.name for p in markers.iterdir())
    assert ran == [], f"the owner's git ran the builder's code: {ran}: " + " | ".join(
        (markers / name).read_text().strip() for name in ran
    )
