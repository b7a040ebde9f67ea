"""Where a session's bounds are held: a cgroup v2 subtree the daemon may take, else the watcher.

Each case is a machine laid out in a folder as the kernel shows it (``/proc/self`` and
the cgroup file system), read by :func:`butler.sandbox.cgroups.find`.
"""

from __future__ import annotations

import os
from pathlib import Path

from butler.sandbox import cgroups


def machine(
    tmp_path: Path, *, v2: str = "cpu memory pids", hybrid: bool = False, own: str = "/svc"
) -> tuple[Path, Path]:
    """``/proc/self`` and the cgroup v2 folder of a machine, the daemon in ``own``."""
    proc, fs = tmp_path / "proc", tmp_path / "fs" / ("unified" if hybrid else "cgroup")
    proc.mkdir()
    folder = fs / own.lstrip("/")
    folder.mkdir(parents=True)
    if hybrid:
        (fs.parent / "memory").mkdir()
    (folder / "cgroup.controllers").write_text(v2 + "\n")
    (folder / "cgroup.subtree_control").write_text("\n")
    (folder / "cgroup.procs").write_text(f"{os.getpid()}\n")
    (proc / "cgroup").write_text(f"4:memory:/x\n0::{own}\n")
    (proc / "mountinfo").write_text(
        f"30 25 0:26 / {fs} rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
    )
    return proc, folder


def test_a_delegated_cgroup_v2_with_both_controllers_holds_sessions_bounds(tmp_path: Path):
    proc, folder = machine(tmp_path)
    where = cgroups.find(proc)
    assert where.parent == folder
    # The daemon left its cgroup for a leaf, so that its children may have controllers.
    assert (folder / cgroups.DAEMON_LEAF / "cgroup.procs").read_text() == str(os.getpid())
    assert (folder / "cgroup.subtree_control").read_text() == "+memory +pids"


def test_a_hybrid_machine_has_the_watcher_hold_them_saying_why(tmp_path: Path):
    proc, _ = machine(tmp_path, v2="hugetlb", hybrid=True, own="/")
    where = cgroups.find(proc)
    assert where.parent is None
    assert "no memory and pids controller" in where.why
    assert "cgroup v1 hierarchy" in where.why


def test_no_cgroup_v2_at_all_has_the_watcher_hold_them(tmp_path: Path):
    proc, _ = machine(tmp_path)
    (proc / "mountinfo").write_text("")
    assert cgroups.find(proc) == cgroups.Where(None, "no cgroup v2 here")


def test_a_session_cgroup_is_held_at_its_bounds_and_killed_whole(tmp_path: Path):
    folder = tmp_path / "butler-session-1"
    folder.mkdir()
    for name, value in (("memory.swap.max", "max"), ("memory.oom.group", "0")):
        (folder / name).write_text(value)  # the kernel made them with the cgroup
    cgroups.limit(folder, 64, 256)
    assert (folder / "pids.max").read_text() == "64"
    assert (folder / "memory.max").read_text() == str(256 << 20)
    assert (folder / "memory.swap.max").read_text() == "0"
    assert (folder / "memory.oom.group").read_text() == "1"


def test_sessions_cgroups_left_empty_are_swept_and_one_in_use_stays(tmp_path: Path):
    proc, folder = machine(tmp_path)
    left, held = (folder / f"{cgroups.SESSION_PREFIX}{n}" for n in ("left", "held"))
    left.mkdir()
    held.mkdir()
    (held / "cgroup.procs").write_text("4242\n")  # a builder's runtime that outlived its daemon
    assert cgroups.find(proc).parent == folder
    assert not left.exists() and held.exists()
