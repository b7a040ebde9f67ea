"""On a machine where bubblewrap cannot make a user namespace, the jail's proofs fail.

They never pass by skipping: a CI machine without the jail must go red, naming
``scripts/setup-dev``. The machine is simulated by a ``bwrap`` first on PATH
that refuses as bubblewrap does where user namespaces are not allowed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.slow

REFUSAL = (
    "bwrap: No permissions to create new namespace, likely because the kernel does not "
    "allow non-privileged user namespaces."
)
#: Tests that need the jail, each through a different door: the daemon's jail, a
#: builder's, the session path in process, a bare jail, and ask's.
JAIL_TESTS = [
    "tests/sandbox/test_jail.py::test_the_runtime_calls_its_butlers_tools_through_the_jail",
    "tests/sandbox/test_builder_jail.py",
    "tests/sandbox/test_claude_launch.py",
    "tests/sandbox/test_seccomp.py",
    "tests/subagent/test_jail.py::test_chat_runs_in_the_jail_too",
]


def test_every_jail_test_fails_naming_setup_dev_where_no_jail_can_start(tmp_path: Path):
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho {REFUSAL!r} >&2\nexit 1\n")
    fake.chmod(0o755)
    path = f"{fake.parent}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "COLUMNS": "1000"}  # summary lines whole
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-rfEs"]
    done = subprocess.run(
        [*argv, *JAIL_TESTS], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 1, done.stdout[-3000:]
    assert "skipped" not in summary and "passed" not in summary, summary
    # A test fails, or its fixture does (an error): either way red, never skipped.
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    assert len(failed) >= len(JAIL_TESTS), done.stdout[-3000:]
    for line in failed:
        assert "scripts/setup-dev" in line and "No permissions to create new namespace" in line
