"""Claude Code's launcher records its pid in the session's workspace, which the runtime can
write: the daemon signals only a group a child of its own leads (docs/security.md)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from butler.runtimes.claude_code import CliGroup
from butler.runtimes.launch_main import PID_FILE
from butler.runtimes.process import child_group, group_alive
from tests.security.untrusted import finishes

pytestmark = pytest.mark.slow  # real processes


def sleeper(*, new_group: bool) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    return subprocess.Popen(argv, start_new_session=new_group)


def stranger() -> int:
    """A process group of someone else's: led by no child of this process.

    An intermediate process starts it in its own session and exits, so it is nobody's
    child here. Popen returns after the exec, when the group already exists (a shell's
    ``setsid ... & echo $!`` could print the pid before the group was made, or the pid
    of a forked-away setsid)."""
    start = (
        "import subprocess; "
        "print(subprocess.Popen(['sleep', '60'], start_new_session=True,"
        " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL).pid)"
    )
    done = subprocess.run([sys.executable, "-c", start], capture_output=True, text=True, check=True)
    pgid = int(done.stdout)
    assert group_alive(pgid)
    return pgid


async def test_a_planted_pid_signals_nobody_else(tmp_path: Path):
    """Another group here stands for any process on the machine (the database, another
    butler); a ``0`` would be the daemon's own group (checked without sending it)."""
    other = stranger()
    try:
        (tmp_path / PID_FILE).write_text(str(other))
        CliGroup(tmp_path).expire()
        await CliGroup(tmp_path).kill()
        assert group_alive(other)
        (tmp_path / PID_FILE).unlink()
        os.mkfifo(tmp_path / PID_FILE)
        finishes(CliGroup(tmp_path).expire)
        assert child_group(0) is None and child_group(os.getpgrp()) is None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(other, 9)


async def test_the_launchers_own_group_is_still_ended(tmp_path: Path):
    child = sleeper(new_group=True)
    (tmp_path / PID_FILE).write_text(str(child.pid))
    assert child_group(child.pid) == child.pid
    await CliGroup(tmp_path).kill()
    assert child.wait(timeout=30) is not None


def test_only_a_group_a_child_leads_counts():
    plain = sleeper(new_group=False)  # a child, but in the daemon's own group
    try:
        assert child_group(plain.pid) is None
        assert child_group(0) is None and child_group(1) is None and child_group(None) is None
    finally:
        plain.kill()
        plain.wait()
