"""Which sessions a starting worker takes as left behind by a killed one."""

from __future__ import annotations

import os

from butler.workers import ledger


def _entry(owner: int, ticks: int | None, session: str) -> ledger.Entry:
    return ledger.Entry(
        owner=owner,
        owner_ticks=ticks,
        worker=f"host:{owner}",
        butler="tester",
        schema="workers_test",
        session_id=session,
        job_id=1,
        runtime="command",
    )


def test_a_worker_restarted_under_the_killed_ones_pid_still_finds_its_sessions(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("BUTLER_DATA_DIR", str(tmp_path))
    # A worker restarted in a fresh container is pid 1 again, as the killed one was:
    # the same pid, another start time.
    ledger.note(_entry(os.getpid(), ledger.owner_ticks() + 1, "killed-same-pid"))
    ledger.note(_entry(os.getpid(), ledger.owner_ticks(), "mine"))
    ledger.note(_entry(2**22 + 7, None, "killed-other-pid"))  # beyond pid_max: gone
    (ledger.ledger_dir() / "workers_test.not-an-entry.json").write_text("{}")

    found = sorted(entry.session_id for entry in ledger.left_behind())

    assert found == ["killed-other-pid", "killed-same-pid"]
    assert not (ledger.ledger_dir() / "workers_test.not-an-entry.json").exists()
