"""The jail's system-call filter, with real bubblewrap: escapes fail with EPERM, work goes on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from butler.runtimes.process import RuntimeProcess
from butler.sandbox import JailPolicy, open_jail
from butler.sandbox.egress import Target
from butler.sandbox.seccomp import filter_program
from tests.helpers import require_jail

pytestmark = pytest.mark.slow

#: Run in the jail by the system Python: each escape attempt and what it got.
ATTEMPTS = r"""
import ctypes, errno, json, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)

def call(name, *args):
    ctypes.set_errno(0)
    result = getattr(libc, name)(*args)
    return "ok" if result != -1 else errno.errorcode[ctypes.get_errno()]

def run(argv):
    done = subprocess.run(argv, capture_output=True, text=True)
    return "ok" if done.returncode == 0 else done.stderr.strip().rsplit(": ", 1)[-1]

CLONE_NEWUSER = 0x10000000
print(json.dumps({
    "mount": call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
    "unshare_user": call("unshare", CLONE_NEWUSER),
    "unshare_cli": run(["unshare", "-U", "true"]),
    "keyctl": call("syscall", 250, 1, 0),  # keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL)
    "bpf": call("syscall", 321, 0, None, 0),
    "io_uring": call("syscall", 425, 1, ctypes.create_string_buffer(120)),  # io_uring_setup
    "threads": run(["/usr/bin/python3", "-I", "-c",
                    "import threading; t = threading.Thread(target=print); t.start(); t.join()"]),
    "child": run(["/bin/sh", "-c", "echo hello | cat > /dev/null"]),
    # Last: once traced, every signal (a child's SIGCHLD) would stop this process.
    "ptrace": call("ptrace", 0, 0, None, None),  # PTRACE_TRACEME
}))
"""


async def attempts(tmp_path: Path) -> dict[str, str]:
    require_jail()
    lines: list[str] = []
    policy = JailPolicy(writable=(tmp_path,), cwd=tmp_path)
    async with open_jail(policy, frozenset({Target("127.0.0.1", 9)})) as jail:
        outcome = await RuntimeProcess().run(
            ["/usr/bin/python3", "-I", "-c", ATTEMPTS],
            env={"PATH": "/usr/bin:/bin", **jail.env()},
            cwd=tmp_path,
            timeout_s=60,
            on_line=lines.append,
            sandbox=jail,
        )
    assert outcome.returncode == 0, outcome.stderr
    return json.loads(lines[-1])


async def test_escapes_fail_with_eperm_and_ordinary_work_goes_on(tmp_path: Path) -> None:
    assert filter_program() is not None, "libseccomp is needed for the jail's filter"
    seen = await attempts(tmp_path)
    for name in ("ptrace", "mount", "unshare_user", "keyctl", "bpf", "io_uring"):
        assert seen[name] == "EPERM", (name, seen)
    assert seen["unshare_cli"] == "Operation not permitted", seen
    # Threads (clone3 falls back to clone) and child processes still work.
    assert seen["threads"] == "ok" and seen["child"] == "ok", seen


async def test_without_the_filter_those_calls_get_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference: the namespaces and dropped capabilities alone let these through.
    monkeypatch.setattr("butler.sandbox.jail.filter_program", lambda: None)
    seen = await attempts(tmp_path)
    assert seen["ptrace"] == "ok" and seen["unshare_user"] == "ok", seen
    assert seen["io_uring"] == "ok", seen
