"""The daemon's own hygiene: nothing it creates is readable by others, nothing can read it.

``umask 077`` makes every folder and file the process (and every runtime it
starts) creates private to its user: prompts, transcripts, keys, homes.
``PR_SET_DUMPABLE = 0`` keeps other processes of the same user (a runtime
outside a jail, a debugger) from reading its memory or ``/proc/<pid>/environ``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

PR_SET_DUMPABLE = 4
PRIVATE_UMASK = 0o077


def harden_process() -> None:
    """Private umask and a non-dumpable process; a platform without prctl only loses the latter."""
    os.umask(PRIVATE_UMASK)
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except (OSError, AttributeError) as exc:
        log.warning("could not make the process non-dumpable: %s", exc)
