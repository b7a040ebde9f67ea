"""A hostile runtime against its bridge: what it does inside the jail must not get it past
the jail's bounds nor fool the daemon.

Real bubblewrap, real processes; the runtime is a shell script doing what a runtime the
model controls could do.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from butler.sandbox import JailPolicy
from butler.sandbox.jail import start_jail
from tests.sandbox.jailed import jailed

pytestmark = pytest.mark.slow  # real jails

BOUNDS = {"max_processes": 32, "max_memory_mb": 64}


async def bounded(folder: Path, script: str) -> tuple[int, str, str]:
    """``script`` run by ``sh`` in a jail held to :data:`BOUNDS`: status, stdout, stderr."""
    policy = JailPolicy(writable=(folder,), cwd=folder, **BOUNDS)
    status, out, err, _ = await jailed(folder, ["/bin/sh", "-c", script], policy=policy)
    return status, out.decode(), err.decode()


@pytest.mark.parametrize("place", ["/tmp", "/dev/shm", "/run", "/"])
async def test_files_written_to_the_jails_memory_filesystems_count_against_max_memory_mb(
    bridge: str, tmp_path: Path, place: str
):
    # 200 MiB in a tmpfs is 200 MiB of the machine's memory, which no process's PSS shows.
    script = f"head -c 200M /dev/zero > {place.rstrip('/')}/hoard; sleep 2; echo kept"
    status, out, err = await bounded(tmp_path, script)
    assert "kept" not in out
    assert status == 125
    assert "max_memory_mb = 64" in err


async def test_files_within_max_memory_mb_in_tmp_are_allowed(bridge: str, tmp_path: Path):
    status, out, err = await bounded(
        tmp_path, "head -c 8M /dev/zero > /tmp/small; sleep 0.5; echo kept"
    )
    assert (status, out) == (0, "kept\n"), err


async def test_many_processes_end_the_session_naming_max_processes(bridge: str, tmp_path: Path):
    # Run as root the daemon's jail has no RLIMIT_NPROC: only the bridge's watcher stops it.
    # 200 processes against a bound of 32, not a bare fork bomb: on a machine where the
    # suite runs as root a bare bomb took every pid before the watcher's next look and
    # failed the whole suite's other tests (a run at 20:30 UTC). So this does not show
    # that the watcher's look ends while a bomb grows faster than /proc is read (the
    # attack's finding, fixed in bridge_bounds.c): that was shown once, by hand.
    script = "i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); done; wait"
    status, _, err = await bounded(tmp_path, script)
    assert status == 125
    assert "max_processes = 32" in err


#: Holds ``argv[2]`` connections to the proxy port, then prints the bridge's threads, then
#: closes them and says whether a new request still goes through.
FLOOD = r"""
import socket, sys, time
port, many = int(sys.argv[1]), int(sys.argv[2])
held = []
for _ in range(many):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"CONNECT example.org:443 HTTP/1.1\r\n\r\n")
    held.append(s)
time.sleep(1)
threads = [l for l in open("/proc/1/status") if l.startswith("Threads:")][0].split()[1]
for s in held:
    s.close()
time.sleep(1)
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"CONNECT example.org:443 HTTP/1.1\r\n\r\n")
print(threads, s.recv(12).decode())
"""


async def test_connections_held_open_by_the_runtime_do_not_grow_the_bridge_past_its_cap(
    bridge: str, tmp_path: Path
):
    # Each relayed connection holds two threads of the jail's init, which no bound counts:
    # uncapped, 16000 of them take every pid of a machine whose pid_max is 32768.
    jail = await start_jail(JailPolicy(writable=(tmp_path,), cwd=tmp_path), frozenset())
    try:
        argv = ["/usr/bin/python3", "-I", "-c", FLOOD, str(jail.proxy_port), "1500"]
        proc = await asyncio.create_subprocess_exec(
            *jail.wrap(argv),
            env={"PATH": "/usr/bin:/bin", **jail.env()},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        await jail.close()
    assert proc.returncode == 0, err
    threads, answer = out.decode().split(maxsplit=1)
    assert int(threads) <= 2 * 512 + 16  # two per connection at the cap, and its own
    assert answer.startswith("HTTP/1.1 403")  # once they closed, the bridge relays again


#: The runtime tries to stop and kill the jail's init, then lists what it holds open.
AT_INIT = r"""
import os, signal, socket, sys, time
fds = sorted(os.listdir("/proc/self/fd"))
for sig in (signal.SIGSTOP, signal.SIGKILL, signal.SIGUSR1, signal.SIGSEGV):
    os.kill(1, sig)
time.sleep(0.3)
state = [l.split()[1] for l in open("/proc/1/status") if l.startswith("State:")][0]
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"CONNECT example.org:443 HTTP/1.1\r\n\r\n")
print(state, s.recv(12).decode(), fds, sep="|")
"""


async def test_the_runtime_can_neither_stop_nor_kill_the_jails_init_and_holds_none_of_its_sockets(
    bridge: str, tmp_path: Path
):
    jail = await start_jail(JailPolicy(writable=(tmp_path,), cwd=tmp_path), frozenset())
    try:
        argv = ["/usr/bin/python3", "-I", "-c", AT_INIT, str(jail.proxy_port)]
        proc = await asyncio.create_subprocess_exec(
            *jail.wrap(argv),
            env={"PATH": "/usr/bin:/bin", **jail.env()},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        await jail.close()
    assert proc.returncode == 0, err
    state, answer, fds = out.decode().strip().split("|")
    assert state in ("S", "R")  # not stopped (T)
    assert answer == "HTTP/1.1 403"  # still relaying: the proxy's answer
    # stdin, stdout, stderr and the listing's own: no listener, no socket to the proxy.
    assert fds == "['0', '1', '2', '3']"
