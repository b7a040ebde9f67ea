"""What a container must grant the jail, named when bubblewrap cannot start in one.

In a container, bubblewrap fails for one of these reasons, each fixed by one
setting of the service (docker-compose.yml sets the first two; docs/deployment.md
says why): the seccomp profile refuses a new user namespace; the container's
masked ``/proc`` makes the kernel refuse the jail a ``/proc`` of its own; or,
on an AppArmor host, Docker's profile refuses the jail's mounts.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Files the engines create in every container: Podman's, then Docker's.
MARKERS = (Path("/run/.containerenv"), Path("/.dockerenv"))
SECCOMP = "security_opt seccomp=deploy/seccomp-bwrap.json (Docker's default refuses it)"
PROC = "security_opt systempaths=unconfined (a masked /proc refuses the jail its own)"
APPARMOR = "security_opt apparmor=unconfined (an AppArmor profile refuses the jail's mounts)"


def in_container() -> bool:
    """Whether this process runs in a Docker or Podman container."""
    return bool(os.environ.get("container")) or any(m.exists() for m in MARKERS)


def container_hint(failure: str) -> str:
    """``""`` outside a container; else what to give the service, for bubblewrap's ``failure``."""
    if not in_container():
        return ""
    if "namespace" in failure:
        needed = SECCOMP
    elif "Permission denied" in failure:
        needed = APPARMOR
    elif "proc" in failure:
        needed = PROC
    else:
        needed = f"{SECCOMP} and {PROC}"
    return f"; in a container the jail needs the service's {needed}, see docs/deployment.md"
