"""The jail's system-call filter: what no runtime needs and every escape does.

bubblewrap loads it (``--seccomp FD``) before it starts the jail's first
process, so the bridge and the runtime and all they start run under it. The
filter allows everything but the calls below, which fail with ``EPERM``:
debugging another process (``ptrace``, ``process_vm_readv``/``writev``),
changing mounts (``mount``, ``umount2``, ``pivot_root``, the new mount API),
kernel keyrings, eBPF, perf events, ``userfaultfd`` (a favourite of kernel
exploits), loading kernels and modules, ``io_uring``, joining namespaces (``setns``), and
creating a new user namespace (``unshare``/``clone`` with ``CLONE_NEWUSER``),
the step that would give a process in the jail capabilities again, and the
ioctls that push characters into a terminal's input (``TIOCSTI``,
``TIOCLINUX``): ``butler chat`` and a builder run on a terminal they share
with the person (no ``--new-session``), whose shell would run what they typed.
``clone3`` gets ``ENOSYS``: its flags sit in memory a filter cannot read, and
the C libraries fall back to ``clone``, whose flags it can (as Docker's
default profile does).

The BPF program is made by libseccomp (the system's ``libseccomp.so.2``,
through the ``pyseccomp`` bindings) once per process, never hand-assembled.
"""

from __future__ import annotations

import errno
import logging
import tempfile
import termios
from functools import lru_cache

log = logging.getLogger("butler.sandbox")

#: System calls that fail with EPERM in the jail; ones this kernel's ABI lacks are skipped.
DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "setns",
    "open_by_handle_at",
    # io_uring's operations run past this filter, and it is the kernel's busiest
    # source of exploits of late (Docker's default profile refuses it too);
    # libuv and the C libraries fall back to plain calls without it.
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
)
CLONE_NEWUSER = 0x10000000
#: ioctls that type into a terminal (TIOCSTI, TIOCLINUX): an interactive jail shares the
#: person's terminal, whose shell would run what was typed once the agent has gone.
TERMINAL_INPUT = (termios.TIOCSTI, termios.TIOCLINUX)


@lru_cache(maxsize=1)
def filter_program() -> bytes | None:
    """The jail's BPF program, or None (with one warning) when libseccomp is missing here."""
    try:
        import pyseccomp as seccomp  # loads libseccomp.so.2 with ctypes: only when jailing
    except (ImportError, OSError) as exc:
        log.warning("no system-call filter in the jail: libseccomp is unavailable (%s)", exc)
        return None
    deny = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    for name in DENIED:
        try:
            rules.add_rule(deny, name)
        except (OSError, ValueError, RuntimeError):
            continue  # a call this architecture does not have
    new_user = seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)
    for name in ("unshare", "clone"):
        rules.add_rule(deny, name, new_user)
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    # The kernel reads an ioctl's request as 32 bits: compare only those, or a request
    # with high bits set would slip past (CVE-2019-10063 in Flatpak).
    for request in TERMINAL_INPUT:
        rules.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()
