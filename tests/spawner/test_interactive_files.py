"""An interactive session (a builder's runtime in a terminal) has its config files written
where its runtime can write, as the untrusted-file module writes there: a link in its
home is never followed to a folder of the owner's (docs/security.md, the trust map)."""

from __future__ import annotations

from pathlib import Path

import pytest

from butler.errors import UserError
from butler.paths import butler_dir
from butler.spawner.interactive import InteractiveRequest
from tests.fakes.runtime import FakeAdapter

#: Builders of butler ``tester`` may run Codex; its terminal mode writes
#: ``.codex/config.toml`` into the session's home.
CODEX_BUILDERS = '\n[butler.builders.runtimes.codex]\ncli_path = "/bin/true"\n'


async def test_a_builders_config_never_lands_in_a_folder_its_home_links_to(
    make_spawner, tmp_path: Path
):
    spawner = make_spawner(FakeAdapter(), extra=CODEX_BUILDERS)
    owner = tmp_path / "owner"  # a folder of the owner's, say ~/.config
    owner.mkdir()
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    request = InteractiveRequest(
        prompt="Fix the bug", cwd=worktree, folder=tmp_path / "builder", runtime="codex"
    )
    with pytest.raises(UserError, match=r"\.codex/config\.toml: cannot write"):
        async with spawner.interactive(request) as session:
            home = butler_dir(spawner.config) / "homes" / session.session_id
            home.mkdir(parents=True, exist_ok=True)
            (home / ".codex").symlink_to(owner)
            await session.launch()
    assert list(owner.iterdir()) == []
    row = await spawner.sessions.get(session.session_id)
    assert row["status"] == "failed"
    assert "config.toml: cannot write" in row["error"]
