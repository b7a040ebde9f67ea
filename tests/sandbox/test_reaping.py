"""The bridge is its jail's init: what a runtime leaves behind is reaped inside the jail.

Nothing of a jail is left for the machine's init to reap, and the CPU of what
the jail ran reaches the process that started it (the daemon), so its
accounting holds the whole session. Real bubblewrap; the jail is started by a
helper that is the subreaper of its descendants' orphans, so an orphan that
leaves the jail comes to it (as it would go to the machine's init) and is seen.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from butler.sandbox import JailPolicy
from butler.sandbox.jail import start_jail
from tests.helpers import require_jail

pytestmark = pytest.mark.slow  # real jails

#: Starts the jail as the subreaper of its orphans; reports what came to it, and the CPU
#: of its reaped children.
HELPER = """
import ctypes, json, os, resource, subprocess, sys
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    raise SystemExit("prctl failed")
argv, env = json.loads(sys.argv[1])
done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
# An orphan is reparented while its parent exits, before that parent is reaped: any
# process the jail left outside is this helper's child by now.
left = []
while True:
    try:
        pid, _ = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    left.append(pid)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"status": done.returncode, "out": done.stdout, "err": done.stderr,
                  "left": left, "cpu_s": usage.ru_utime + usage.ru_stime}))
"""

#: Burns CPU until its own clock says ``argv[1]`` seconds.
BURN = "import time,sys\nwhile time.process_time() < float(sys.argv[1]): pass\n"

#: The runtime: a grandchild orphaned in the jail (its parent exits at once) that burns
#: 0.2 s of CPU; the runtime waits for it to end, then for it to be reaped, and says which.
ORPHAN = r"""
sh -c '/usr/bin/python3 -c "$0" 0.2 & echo $! > /tmp/grandchild' "$0"
gc=$(cat /tmp/grandchild)
state() { sed 's/.*) //' /proc/$gc/stat 2>/dev/null | cut -d' ' -f1; }
i=0
while [ -e /proc/$gc ] && [ "$(state)" != Z ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
i=0
while [ -e /proc/$gc ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
if [ -e /proc/$gc ]; then echo "left: $(state)"; else echo reaped; fi
"""

#: The runtime leaves a grandchild running when it exits.
LEFT_BEHIND = '/usr/bin/python3 -c "$0" 1000 & echo started'


async def jailed_run(folder: Path, script: str) -> dict:
    """``script`` run by ``sh`` in a jail the helper starts; the helper's report."""
    require_jail()
    jail = await start_jail(JailPolicy(writable=(folder,), cwd=folder), frozenset())
    try:
        argv = jail.wrap(["/bin/sh", "-c", script, BURN])
        env = {"PATH": "/usr/bin:/bin", **jail.env()}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", HELPER, json.dumps([argv, env]), stdout=asyncio.subprocess.PIPE
        )
        out, _ = await proc.communicate()
    finally:
        await jail.close()
    return json.loads(out)


async def test_an_orphaned_grandchild_is_reaped_inside_the_jail_and_its_cpu_reaches_the_starter(
    bridge: str, tmp_path: Path
):
    report = await jailed_run(tmp_path, ORPHAN)
    assert report["status"] == 0, report["err"]
    assert report["out"].strip() == "reaped"
    assert report["left"] == []  # nothing came out of the jail to be reaped by another
    # The grandchild's 0.2 s (its own clock) reached the starter's reaped children.
    assert report["cpu_s"] >= 0.2 * 0.95, report


async def test_a_runtime_that_leaves_a_process_running_leaves_no_orphan_outside_its_jail(
    bridge: str, tmp_path: Path
):
    report = await jailed_run(tmp_path, LEFT_BEHIND)
    assert report["status"] == 0, report["err"]
    assert report["out"].strip() == "started"
    assert report["left"] == []
