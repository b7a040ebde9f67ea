"""The jail's system-call filter: what no runtime needs and every escape does.

bubblewrap loads it (``--seccomp FD``) before it starts the jail's first
process, so the bridge and the runtime and all they start run under it. The
filter allows everything but the calls below, which fail with ``EPERM``:
debugging another process (``ptrace``, ``process_vm_readv``/``writev``),
changing mounts (``mount``, ``umount2``, ``pivot_root``, the new mount API),
kernel keyrings, eBPF, perf events, ``userfaultfd`` (a favourite of kernel
exploits), loading kernels and modules, joining namespaces (``setns``), and
creating a new user namespace (``unshare``/``clone`` with ``CLONE_NEWUSER``),
the step that would give a process in the jail capabilities again.
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
)
CLONE_NEWUSER = 0x10000000


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
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()
