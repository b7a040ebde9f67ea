"""Faults a test brings about itself: a PostgreSQL of its own to stop, a folder that is full.

Never the machine's server on 127.0.0.1:5432 (other tests use it): the server
here is the embedded one, on a Unix socket in a folder of the test's own.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from tests.helpers import require_tool


@pytest.fixture
async def own_postgres() -> AsyncIterator[Path]:
    """A private PostgreSQL data folder this test may stop and start (a short path: the
    server's socket goes in it)."""
    root = Path(tempfile.mkdtemp(prefix="butler-outage-"))
    yield root / "pgdata"
    for proc in psutil.process_iter(["name", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if proc.info["name"] == "postgres" and str(root) in " ".join(
                proc.info["cmdline"] or []
            ):
                proc.send_signal(signal.SIGQUIT)
    shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def small_disk(folder: Path, size_kib: int = 256) -> Iterator[Path]:
    """``folder`` as a tmpfs of ``size_kib`` KiB, unmounted after; the test must run as root."""
    mount = require_tool("mount")
    if os.geteuid() != 0:
        pytest.fail("a full-disk test mounts a small tmpfs: run it as root (CI does)", False)
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0755", "tmpfs", str(folder)],
        check=True,
    )
    try:
        yield folder
    finally:
        subprocess.run([require_tool("umount"), "-l", str(folder)], check=False)


def fill(folder: Path) -> None:
    """Write into ``folder`` until its file system has no byte left."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
