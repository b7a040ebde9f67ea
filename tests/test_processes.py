"""A process named by pid and start time: a number that comes round again is not its owner."""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid
from pathlib import Path

from butler.processes import owner_gone, owner_mark, start_ticks
from butler.sandbox.folders import OWNER_FILE, PREFIX, new_jail_folder, sweep_jail_folders


def test_a_mark_is_gone_when_its_process_ended_or_its_number_was_given_again():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        mark = owner_mark(sleeper.pid)
        assert mark == f"{sleeper.pid}.{start_ticks(sleeper.pid)}"
        assert not owner_gone(mark)
        # The same number held by a process that started at another time: not the owner.
        assert owner_gone(f"{sleeper.pid}.{start_ticks(sleeper.pid) - 1}")
    finally:
        sleeper.kill()
        sleeper.wait()
    assert owner_gone(mark)
    assert not owner_gone(owner_mark())


def test_marks_it_did_not_make_are_left_alone_and_a_bare_pid_of_its_own_is_a_predecessors():
    for stranger in ("", "abc", "12.x", "../1", "1.2.3"):
        assert not owner_gone(stranger)
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert not owner_gone(str(sleeper.pid))  # written before marks had a start: kept
    finally:
        sleeper.kill()
        sleeper.wait()
    assert owner_gone(str(os.getpid()))  # this process marks its own with a start


def test_jail_folders_of_a_killed_daemon_with_this_daemons_pid_are_swept(monkeypatch):
    # A daemon restarted in a container has the killed one's pid; the killed one's jail
    # folders (launch scripts, sockets) must go, this daemon's own stay.
    # In a temp folder of its own: a daemon another test starts sweeps the system one,
    # and would take the "killed" folder before this sweep does.
    private = Path(tempfile.mkdtemp(prefix="bw-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    mine = new_jail_folder()
    tag = uuid.uuid4().hex[:8]
    earlier = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{tag}", dir=mine.parent))
    (earlier / OWNER_FILE).write_text(f"{os.getpid()}.1")
    try:
        assert earlier in sweep_jail_folders()
        assert not earlier.exists() and mine.is_dir()
    finally:
        for folder in (mine, earlier):
            if folder.exists():
                for item in folder.iterdir():
                    item.unlink()
                folder.rmdir()
        private.rmdir()


def test_this_processs_mark_names_it_and_a_forked_childs_names_the_child():
    assert owner_mark() == f"{os.getpid()}.{start_ticks(os.getpid())}"
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the parent's mark, read before the fork, is not the child's
        os.write(write, f"{owner_mark()} {os.getpid()}.{start_ticks(os.getpid())}".encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    mark, expected = os.read(read, 100).decode().split()
    os.close(read)
    assert mark == expected
    assert mark.startswith(f"{child}.")
