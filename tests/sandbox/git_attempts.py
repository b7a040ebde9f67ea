"""A script run under a jail policy, and what it was allowed or refused."""

from __future__ import annotations

import shutil
import subprocess

from butler.sandbox import probe
from butler.sandbox.policy import JailPolicy, bwrap_argv


def attempts(policy: JailPolicy, script: str) -> str:
    """What ``script`` printed, run by ``sh`` inside a real jail of ``policy``."""
    assert probe() is None, f"no jail here: {probe()}; run scripts/setup-dev"
    argv = [*bwrap_argv(policy, shutil.which("bwrap") or "bwrap"), "--", "/bin/sh", "-c", script]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return done.stdout + done.stderr
