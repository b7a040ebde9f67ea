"""CPU clocks that count all the work a trigger causes, not only what its processes are charged.

A process's own clock and its reaped children's (``/proc/<pid>/stat``) miss
work no process of ours is charged for: the PostgreSQL backends answering
the daemon, the kernel threads tearing a jail's namespaces down, interrupts,
and any jailed process never reaped up to the daemon. So a trigger's CPU is
counted two ways, side by side:

- machine-wide: busy time from ``/proc/stat`` (every field but idle and
  iowait) less the measuring client's own (``getrusage(RUSAGE_SELF)``);
  exact on a quiet machine, and everyone else's work on a busy one;
- accounted: the daemon's own and reaped children's, plus its PostgreSQL
  backends', plus kernel threads' and interrupt time (machine-wide, but
  small), plus any jailed process that escaped the daemon's accounting.
  Under bubblewrap 0.8 a jail's pid-namespace init was orphaned (its monitor
  exits before it) and the machine's init reaped it, charged with all the
  jail ran; now the bridge is the jail's init and is reaped by bubblewrap, so
  the jail's CPU reaches the daemon. The benchmark still makes itself the
  daemon's subreaper (:func:`adopt_orphans`) and reaps what comes to it
  (:func:`reap_orphans`) into its own children's clock: what it finds there
  is what escaped (none, when all is well).
"""

from __future__ import annotations

import ctypes
import os
import resource
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
#: The kernel's thread that starts every other kernel thread.
KTHREADD = 2


def machine_busy_s() -> float:
    """CPU seconds every core spent busy since boot (``/proc/stat``: all but idle and iowait)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICKS


def interrupts_s() -> float:
    """CPU seconds spent in hard and soft interrupts since boot, charged to no process."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (fields[5] + fields[6]) / TICKS


def client_s() -> float:
    """The measuring process's own CPU seconds (all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_s() -> float:
    """CPU seconds of the measuring process's reaped children (and theirs, when reaped)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _stat(pid: int | str) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None  # gone meanwhile


def process_s(pid: int) -> tuple[float, float]:
    """CPU seconds of ``pid`` itself and of its reaped children."""
    fields = _stat(pid)
    if fields is None:
        return 0.0, 0.0
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime) / TICKS, (cutime + cstime) / TICKS


PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans(on: bool = True) -> None:
    """Make this process (or stop it being) the subreaper of its descendants' orphans."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap_orphans() -> int:
    """Reap the bubblewrap processes this process adopted and that have ended; how many.

    Only ``bwrap`` zombies: the children this process started itself are
    asyncio's to wait for, and never bubblewrap.
    """
    me, reaped = str(os.getpid()), 0
    for name in os.listdir("/proc"):
        fields = _stat(name) if name.isdigit() else None
        if fields is None or fields[1] != me or fields[0] != "Z":
            continue
        try:
            if Path(f"/proc/{name}/comm").read_text().strip() != "bwrap":
                continue
            os.waitpid(int(name), 0)
            reaped += 1
        except (OSError, ChildProcessError):
            continue
    return reaped


def kernel_threads_s() -> float:
    """CPU seconds of every kernel thread (namespace teardown runs in kworkers, for one)."""
    total = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = _stat(name)
            if fields is not None and (fields[1] == str(KTHREADD) or name == str(KTHREADD)):
                total += int(fields[11]) + int(fields[12])
    return total / TICKS


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def peer_ports(pid: int, port: int) -> set[int]:
    """Local ports of ``pid``'s TCP connections to ``port`` (its database connections)."""
    inodes = _socket_inodes(pid)
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if inode in inodes and int(remote.rsplit(":", 1)[1], 16) == port:
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


async def backend_pids(dsn: str, daemon_pid: int) -> list[int]:
    """The PostgreSQL backends serving ``daemon_pid``'s connections (a local server)."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        port = await conn.fetchval("SELECT inet_server_port()")
        ports = peer_ports(daemon_pid, port)
        rows = await conn.fetch(
            "SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])", list(ports)
        )
    finally:
        await conn.close()
    return [r["pid"] for r in rows]


@dataclass
class Clocks:
    """A reading of every clock; the difference of two readings is one measured stretch."""

    machine: float
    client: float
    children: float
    kernel: float
    #: The daemon's own and reaped children's, and its database backends'.
    daemon: float = 0.0
    database: float = 0.0
    #: The daemon's process alone (every thread), without what it reaped: its own Python.
    daemon_own: float = 0.0

    @classmethod
    def read(cls, daemon_pid: int | None = None, backends: Sequence[int] = ()) -> Clocks:
        reap_orphans()  # the jails ended so far, into this process's children's clock
        own, reaped = process_s(daemon_pid) if daemon_pid else (0.0, 0.0)
        database = sum(sum(process_s(pid)) for pid in backends)
        return cls(
            machine_busy_s(),
            client_s(),
            children_s(),
            kernel_threads_s() + interrupts_s(),
            own + reaped,
            database,
            own,
        )

    def __sub__(self, before: Clocks) -> Clocks:
        return Clocks(
            self.machine - before.machine,
            self.client - before.client,
            self.children - before.children,
            self.kernel - before.kernel,
            self.daemon - before.daemon,
            self.database - before.database,
            self.daemon_own - before.daemon_own,
        )

    @property
    def machine_less_client(self) -> float:
        return self.machine - self.client

    @property
    def accounted(self) -> float:
        """Daemon (its own, reaped children's), adopted jails or floor children, DB, kernel."""
        return self.daemon + self.children + self.database + self.kernel
