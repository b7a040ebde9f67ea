"""Not as root: a daemon started by root refuses, unless told, as Jupyter does.

A butler's daemon reads and runs what its sessions can write (a prompt file,
a repository's ``.git``), and every such touch is guarded; root turns a gap
in any guard into the whole machine. So ``butler run`` and ``butler up``
started as root stop with one line, unless ``--allow-root`` (or
``BUTLER_ALLOW_ROOT=1``) says the owner means it: a container whose root is
not the host's, a machine with nothing else on it.
"""

from __future__ import annotations

import os

#: The environment variable that stands for ``--allow-root`` (containers, service units).
ALLOW_ROOT_ENV = "BUTLER_ALLOW_ROOT"


def root_refusal(allow_root: bool) -> str | None:
    """Why a daemon must not start as this user, or None when it may."""
    if allow_root or os.geteuid() != 0:
        return None
    return (
        "refusing to run as root (its sessions and the daemon's git would act as root): "
        f"run butler as an unprivileged user, or pass --allow-root (or set {ALLOW_ROOT_ENV}=1) "
        "if you mean it"
    )
