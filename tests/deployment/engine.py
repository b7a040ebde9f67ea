"""The machine's container engine as the deployment test drives it: Podman and podman-compose.

Podman, not Docker: it runs here without a daemon (nothing to start for a test
and nothing left running after it), and podman-compose hands each service's
``security_opt`` to ``podman run`` as written, the seccomp profile's path
included. ``containers.conf`` next to this file is this machine's engine
configuration, used for every call (see its comments).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from tests.helpers import REPO, missing_tool

HERE = Path(__file__).parent
CONTAINERS_CONF = HERE / "containers.conf"
#: The test's changes to docker-compose.yml: base images made here, a command-runtime butler.
STAND_IN_COMPOSE = HERE / "compose.stand-ins.yml"


def environment(**extra: str) -> dict[str, str]:
    """This process's environment with the engine's configuration and ``extra``."""
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF), **extra}


def podman_path() -> str:
    found = shutil.which("podman")
    if found is None:
        missing_tool("podman (the container engine of the deployment test)")
    return str(found)


def compose_path() -> str:
    found = shutil.which(
        "podman-compose", path=f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    )
    if found is None:
        missing_tool("podman-compose")
    return str(found)


def run(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    check: bool = True,
    stdin: IO[bytes] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``argv`` from the repository's folder; fails the test with its output when it fails."""
    done = subprocess.run(
        list(argv),
        cwd=REPO,
        env=env or environment(),
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        output = f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        raise AssertionError(f"{' '.join(argv)} exited {done.returncode}:\n{output}")
    return done


def podman(
    *args: str, timeout: float = 600, check: bool = True, stdin: IO[bytes] | None = None
) -> subprocess.CompletedProcess[str]:
    """``podman`` with the engine's configuration."""
    return run([podman_path(), *args], timeout=timeout, check=check, stdin=stdin)
