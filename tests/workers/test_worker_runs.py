"""What a worker hands back when a session cannot start on its machine."""

from __future__ import annotations

import tempfile

from butler.config import load_config
from butler.spawner.execution import Execution
from butler.spawner.session import Session
from butler.spawner.worker_runs import WorkerRuns
from tests.fakes.runtime import FakeAdapter


async def test_a_cause_named_for_the_user_reaches_the_daemon_as_it_was_said(
    butler_dir, tmp_path, monkeypatch
):
    """A temp folder the worker cannot write is the user's to fix, as in the daemon: the
    row says so, not "internal error on the worker: ButlerError: ..."."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    config = load_config(butler_dir)
    runs = WorkerRuns(Execution(config, FakeAdapter(config.runtime), None, None, None, "none"))  # type: ignore[arg-type]
    session = Session(id="00000000-0000-0000-0000-000000000001", prompt="p")
    end = await runs.run(session, "t", lambda pid: None)
    assert end.status == "failed"
    assert end.error is not None
    assert end.error.startswith("cannot create the session's workspace in "), end
    assert "set TMPDIR to a folder with room" in end.error
