"""A repository a session hid behind a folder it closed to its owner is disarmed too.

The daemon runs as an ordinary user, and a jail's runtime writes as that user: it can
``chmod`` what it made. ``chmod 100 reports`` leaves ``reports/2024/`` reachable to the
owner's git (a folder needs only its search bit to be passed through) but not listable
by the daemon's look, which passed over every folder it could not open, said nothing,
and left ``reports/2024/.git`` armed: the owner's ``git status`` there ran its
``core.fsmonitor``. Run as ``nobody`` (root reads every folder whatever its mode), in a
forked child, the git commands real.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from butler.sandbox.git_view import BUTLER_FOLDER_KEEPS
from butler.security.repositories import disarm

pytestmark = pytest.mark.slow  # a child process, and git

NOBODY = pwd.getpwnam("nobody")


@pytest.fixture
def nobodys_folder() -> Iterator[Path]:
    """A butler folder ``nobody`` owns (the test's own tmp_path is root's, 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="butler-closed-"))
    os.chown(folder, NOBODY.pw_uid, NOBODY.pw_gid)
    try:
        yield folder
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(folder)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def as_nobody(work) -> dict:
    """``work()``'s JSON answer, run in a child that is ``nobody`` (modules already loaded)."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.close(read)
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY.pw_gid)
            os.setuid(NOBODY.pw_uid)
            os.write(write, json.dumps(work()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        said = answer.read()
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and said, said
    return json.loads(said)


def git(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(where), "GIT_CONFIG_NOSYSTEM": "1"}
    argv = ["git", "-c", "user.name=o", "-c", "user.email=o@o", *args]
    return subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, check=False)


def test_a_repository_behind_a_folder_closed_to_its_owner_is_disarmed(nobodys_folder: Path):
    folder = nobodys_folder
    stolen = folder / "stolen"

    def session_then_daemon_then_owner() -> dict:
        # What the session does, in its jail (as the same user).
        for where in ("reports/2024", "notes"):
            (folder / where).mkdir(parents=True)
            git(folder / where, "init", "-q")
            git(folder / where, "config", "core.fsmonitor", f"touch {stolen}; false")
        (folder / "reports").chmod(0o100)  # passable, not listable
        (folder / "notes" / ".git").chmod(0o300)  # git reads HEAD; nobody lists it
        look = disarm(folder, BUTLER_FOLDER_KEEPS)  # the jail's end
        for where in ("reports/2024", "notes"):  # the owner, later
            git(folder / where, "status")
        return {
            "stolen": stolen.exists(),
            "disarmed": sorted(str(d.path.relative_to(folder)) for d in look.disarmed),
            "unfinished": look.unfinished,
        }

    seen = as_nobody(session_then_daemon_then_owner)
    assert seen["stolen"] is False, seen
    assert seen["disarmed"] == ["notes/.git/HEAD", "reports/2024/.git/HEAD"], seen


def test_another_users_folder_it_cannot_read_is_said_and_the_look_goes_on(nobodys_folder: Path):
    """A folder of another user's in the butler folder (root's, writable but not listable by
    the daemon's user) cannot be opened to its owner: the look says so and looks at the
    rest, rather than passing over it unsaid or stopping there."""
    folder = nobodys_folder
    foreign = folder / "aaa"
    foreign.mkdir(mode=0o733)
    foreign.chmod(0o733)  # root's: others may write and pass, not list

    def session_then_daemon() -> dict:
        (foreign / "evil").mkdir()
        git(foreign / "evil", "init", "-q")
        (folder / "zzz").mkdir()
        git(folder / "zzz", "init", "-q")
        look = disarm(folder, BUTLER_FOLDER_KEEPS)
        return {
            "disarmed": sorted(str(d.path.relative_to(folder)) for d in look.disarmed),
            "unfinished": look.unfinished,
        }

    seen = as_nobody(session_then_daemon)
    assert seen["disarmed"] == ["zzz/.git/HEAD"], seen
    assert seen["unfinished"] == "aaa cannot be read", seen
