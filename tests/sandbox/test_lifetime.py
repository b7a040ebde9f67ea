"""Nothing a jailed runtime starts outlives its session, nor its daemon."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from tests.helpers import butler_client, require_jail, wait_until
from tests.sandbox.conftest import Jailed, jailed_butler
from tests.sandbox.processes import processes_naming

pytestmark = pytest.mark.slow


async def test_a_setsid_grandchild_is_gone_when_the_session_times_out(jailed: Jailed):
    marker = jailed.folder / "grandchild.pid"
    result = await jailed.run({"setsid": str(marker)}, timeout_s=4)
    assert not result["success"] and "timeout" in result["error"]
    assert marker.exists()  # it did start, and left its process group
    await asyncio.to_thread(wait_until, lambda: not processes_naming(str(marker)), 10)


async def test_kill_9_of_the_daemon_leaves_no_runtime_process(tmp_path: Path, schema_name: str):
    require_jail()
    # A temp folder of its own: a daemon another test starts meanwhile sweeps the system
    # one, and would take the killed daemon's jail folder before this test looks for it.
    tmp = Path(tempfile.mkdtemp(prefix="bw-", dir="/tmp"))
    daemon, folder, data = jailed_butler(tmp_path, schema_name, env={"TMPDIR": str(tmp)})
    try:
        with daemon:
            await _killed_daemon_leaves_no_runtime(Jailed(daemon, folder, data, schema_name), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def _killed_daemon_leaves_no_runtime(jailed: Jailed, tmp: Path) -> None:
    marker = jailed.folder / "orphan.pid"
    plan = json.dumps({"setsid": str(marker)})
    async with butler_client(f"{jailed.daemon.url}/mcp", timeout=60) as client:
        running = asyncio.create_task(client.call_tool("trigger", {"prompt": plan}))
        await asyncio.to_thread(wait_until, marker.exists, 30)
        assert processes_naming(str(marker)) and processes_naming(str(jailed.folder / "probe.py"))
        jailed.daemon.proc.send_signal(signal.SIGKILL)
        jailed.daemon.proc.wait(timeout=10)
        running.cancel()

    def gone() -> bool:
        return not processes_naming(str(marker)) and not processes_naming(
            str(jailed.folder / "probe.py")
        )

    await asyncio.to_thread(wait_until, gone, 10)
    # Its jail's folder (launch script, options file, proxy socket) outlived it...
    killed = str(jailed.daemon.proc.pid)
    left = [f for f, owner in jail_folders(tmp) if owner.split(".")[0] == killed]
    assert len(left) == 1, left
    # ...until the next start of a daemon, which sweeps what dead owners left.
    await asyncio.to_thread(jailed.daemon.start)
    assert not left[0].exists()


def jail_folders(root: Path) -> list[tuple[Path, str]]:
    """The jail folders in ``root``, each with its owner mark (a jail closing meanwhile is
    not one)."""
    found = []
    for folder in root.glob("butler-jail-*"):
        try:
            found.append((folder, (folder / ".owner-pid").read_text()))
        except OSError:
            continue
    return found
