"""Bounds held by a cgroup: the runtime joins the session's cgroup, the bridge stays out of it,
and an event of the kernel ends the jail at once, naming the bound (bridge_cgroup.c).

This machine's cgroup v2 tree has no memory or pids controller (they belong to its
cgroup v1 hierarchy), so the event is one every cgroup v2 file system sends: an empty
cgroup frozen moves ``frozen`` in its ``cgroup.events``, woken by the same POLLPRI as
``pids.events``' ``max`` and ``memory.events``' ``oom_kill``. Real bubblewrap, the real
bridge, the kernel's cgroup files; as root, who may make cgroups here.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from butler.sandbox.policy import BRIDGE_PATH, JailPolicy, bwrap_argv
from tests.helpers import require_jail

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="only root may make cgroups on this machine"),
]

#: The cgroup v2 file system: alone, or beside v1 (a hybrid machine, as this one).
CGROUP2 = next(
    (
        Path(p)
        for p in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")
        if Path(p, "cgroup.procs").exists()
    ),
    None,
)


@pytest.fixture
def cgroup_pair() -> Iterator[tuple[Path, Path]]:
    """A cgroup for the runtime, and an empty one whose freezing stands for a bound passed."""
    assert CGROUP2 is not None, "no cgroup v2 file system on this machine"
    made = [CGROUP2 / f"butler-test-{os.getpid()}-{name}" for name in ("run", "flag")]
    for folder in made:
        folder.mkdir()
    try:
        yield made[0], made[1]
    finally:
        (made[1] / "cgroup.freeze").write_text("0")
        for folder in made:
            (folder / "cgroup.kill").write_text("1")
            deadline = time.monotonic() + 5
            while folder.exists() and time.monotonic() < deadline:
                try:
                    folder.rmdir()
                except OSError:
                    time.sleep(0.01)


async def test_the_runtime_is_held_in_its_cgroup_and_an_event_ends_the_jail_naming_the_bound(
    tmp_path: Path, cgroup_pair: tuple[Path, Path]
):
    require_jail()
    run, flag = cgroup_pair
    options = ["--as-pid-1", *bwrap_argv(JailPolicy(writable=(tmp_path,), cwd=tmp_path))[1:]]
    bridge = [str(BRIDGE_PATH), "/nowhere.sock", "3128", "", "limits=64,256"]
    bridge += ["cgroup=5", "watch=6:frozen:processes"]
    runtime = ["/bin/sh", "-c", "echo started; exec sleep 60"]
    # As a launch script hands them over (Jail.launcher): opened by the shell, outside.
    argv = " ".join(shlex.quote(a) for a in ["bwrap", *options, "--", *bridge, "--", *runtime])
    script = f"exec {argv} 5>>{run / 'cgroup.procs'} 6<{flag / 'cgroup.events'}"
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", script, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line == b"started\n", await proc.stderr.read()
    # The runtime alone: bubblewrap and the bridge (and its relay threads) stay outside.
    assert len((run / "cgroup.procs").read_text().split()) == 1
    started = time.monotonic()
    (flag / "cgroup.freeze").write_text("1")  # the kernel's event: a bound passed
    status = await asyncio.wait_for(proc.wait(), 30)
    err = await proc.stderr.read()
    assert time.monotonic() - started < 5  # at once, not at the runtime's end
    assert status == 125, err
    assert b"went past [butler.sandbox] max_processes = 64" in err
    assert (run / "cgroup.procs").read_text() == ""  # every process of the jail ended
