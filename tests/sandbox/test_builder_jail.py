"""A builder's terminal session runs in the jail too, and dies with its tmux server."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from butler.runtimes import launcher
from tests.builders.conftest import (
    Builders,
    kill_tmux_server,
)
from tests.helpers import wait_until
from tests.sandbox.processes import processes_naming

pytestmark = pytest.mark.slow


def test_a_builder_tui_runs_jailed_and_tmux_kill_server_ends_it(jailed_builders: Builders):
    builders = jailed_builders
    builder = builders.spawn("Fix bug")
    builders.wait_screen(builder, "agent> ")
    seen = builders.seen(builder)
    assert seen["cwd"] == builder["worktree"]
    assert "HTTPS_PROXY" in seen["env"]  # its only way out is the jail's proxy
    agent = str(builders.folder / "agent.py")
    # The agent itself (the jail's bridge names it in its own command line too).
    (pid,) = [
        p for p in processes_naming(agent) if psutil.Process(p).cmdline()[1:3] == ["-I", agent]
    ]
    ancestors = [parent.name() for parent in psutil.Process(pid).parents()]
    assert "bwrap" in ancestors, ancestors
    # Seen from inside the jail: its own folder is there, the launcher's files beside it
    # (pid, exit record, restart notes, which the daemon trusts) are not.
    folder = builders.data_dir / "butlers" / "tester" / "builders" / builder["id"]
    inside = Path(f"/proc/{pid}/root") / folder.relative_to("/")
    assert (folder / "jail.json").is_file() and (folder / launcher.SCRIPT_FILE).is_file()
    assert (inside / "run").is_dir()
    assert not (inside / "jail.json").exists() and not (inside / launcher.SCRIPT_FILE).exists()
    kill_tmux_server(builders.socket)
    wait_until(lambda: not processes_naming(agent), timeout=10)
