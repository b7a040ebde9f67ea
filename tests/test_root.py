"""Not as root: ``butler run`` and ``butler up`` started by root refuse, unless told."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import TEST_DSN
from tests.helpers import REPO, DaemonProcess, free_port, write_butler

NOBODY = 65534


def butler(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``butler ARGS`` as root, without the suite's BUTLER_ALLOW_ROOT unless ``env`` sets it."""
    clean = {k: v for k, v in os.environ.items() if k != "BUTLER_ALLOW_ROOT"}
    argv = [sys.executable, "-m", "butler.cli", *args]
    return subprocess.run(
        argv, capture_output=True, text=True, env={**clean, **env}, cwd=REPO, timeout=60
    )


@pytest.mark.parametrize(
    ("command", "env"),
    [
        (("run", "--config", "roster/health"), {}),
        (("up", "--roster", "roster"), {}),
        (("run", "--config", "roster/health"), {"BUTLER_ALLOW_ROOT": "0"}),
    ],
)
def test_a_daemon_started_as_root_refuses_in_one_line_naming_the_way_past(command, env):
    assert os.geteuid() == 0, "the suite runs as root; this test proves the refusal there"
    done = butler(*command, **env)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "refusing to run as root" in lines[0]
    assert "--allow-root" in lines[0] and "BUTLER_ALLOW_ROOT=1" in lines[0]


@pytest.mark.parametrize(
    ("flag", "env"), [(("--allow-root",), {}), ((), {"BUTLER_ALLOW_ROOT": "1"})]
)
def test_root_told_it_is_meant_goes_on_to_its_config(flag, env):
    done = butler("run", "--config", "/nonexistent/butler", *flag, **env)
    assert done.returncode == 2
    assert "refusing" not in done.stderr and "/nonexistent/butler" in done.stderr


@pytest.fixture
def nobodys_folder() -> Iterator[Path]:
    """A folder ``nobody`` owns and reaches (the test's own tmp_path is root's, 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="butler-nobody-"))
    folder.chmod(0o755)
    os.chown(folder, NOBODY, NOBODY)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class NobodysDaemon(DaemonProcess):
    """``butler run`` as ``nobody``, without BUTLER_ALLOW_ROOT."""

    def argv(self) -> list[str]:
        become = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        return [*become, *super().argv()]


@pytest.mark.slow  # a daemon process
def test_an_unprivileged_user_is_not_refused(nobodys_folder: Path, schema_name: str):
    port = free_port()
    folder = write_butler(nobodys_folder / "roster", "plain", port=port, schema=schema_name)
    data = nobodys_folder / "data"
    data.mkdir()
    for path in (folder.parent, folder, data, *folder.iterdir()):
        os.chown(path, NOBODY, NOBODY)
    env = {"BUTLER_DATA_DIR": str(data), "HOME": str(nobodys_folder)}
    daemon = NobodysDaemon(
        folder, port=port, database_url=TEST_DSN, env=env, log_path=nobodys_folder / "log"
    )
    daemon.env.pop("BUTLER_ALLOW_ROOT")
    with daemon:
        pass  # it answered /health: it started
    assert "refusing" not in daemon.logs()
