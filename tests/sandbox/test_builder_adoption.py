"""A builder adopted by a restarted daemon keeps working: its session token is valid
again and, jailed, its egress proxy (the jail's only way out) is started again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.builders.butler_state import state_get
from tests.builders.conftest import Builders, builders  # noqa: F401 - a fixture
from tests.helpers import wait_until

pytestmark = pytest.mark.slow


def call(daemon: Builders, builder: dict, value: str) -> str:
    """Have the builder's agent call the butler's ``state_set``; what it printed."""
    subprocess.run(
        ["tmux", "-L", daemon.socket, "send-keys", "-t", f"={builder['tmux_session']}:",
         f"call {value}", "Enter"],
        check=True,
    )  # fmt: skip

    def answered() -> str | None:
        shown = daemon.screen(builder)
        lines = [line for line in shown.splitlines() if line.startswith(("CALLED<<", "CALL F"))]
        lines = [line for line in lines if value in line or line.startswith("CALL F")]
        return lines[-1] if lines else None

    return wait_until(answered, timeout=60, interval=0.2)


@pytest.mark.parametrize("fixture", ["builders", "jailed_builders"])
def test_a_builder_calls_its_butler_after_a_restart(request, fixture):
    daemon: Builders = request.getfixturevalue(fixture)
    builder = daemon.spawn("Fix bug")
    daemon.wait_screen(builder, "agent> ")
    assert call(daemon, builder, "before") == "CALLED<<before>>"

    daemon.daemon.stop()
    daemon.daemon.start()

    # Without its token the server would refuse it (401); without its proxy, jailed,
    # it could not even connect.
    assert call(daemon, builder, "after") == "CALLED<<after>>"
    assert state_get(daemon.daemon.url, "agent/called") == "after"
    row = daemon.row(builder["session_id"])
    assert row["status"] == "running" and row["metadata"]["adopted_at"]
    # An adopted builder stops like any other, and takes its jail's folder with it.
    jail = daemon.data_dir / "butlers" / "tester" / "builders" / builder["id"] / "jail.json"
    assert jail.exists() == (fixture == "jailed_builders")
    jail_folder = Path(json.loads(jail.read_text())["folder"]) if jail.exists() else None
    # What it leaves in its butler folder after the restart (here made for it) is looked
    # after at its end, as a builder's the daemon started.
    subprocess.run(["git", "init", "-q", str(daemon.folder / "left")], check=True)
    assert daemon.cli("builders", "stop", builder["id"]).returncode == 0
    row = daemon.row(builder["session_id"])
    assert row["status"] == "cancelled"
    if jail_folder is not None:
        assert not jail_folder.exists()
        left = daemon.folder / "left" / ".git" / "HEAD"
        assert row["metadata"]["sandbox"]["disarmed"] == [
            {"path": str(left), "now": "HEAD.disarmed"}
        ]
