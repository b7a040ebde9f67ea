"""What an interactive session needs to keep working after its daemon restarts.

A builder's runtime outlives the daemon in tmux, but two things of it live in
the daemon: its session token (the server knows it by its digest only) and,
when jailed, its egress proxy (the jail's only way out, the butler's MCP
server included). Both are written to the builder's private folder when it
starts: the token's digest (which opens nothing by itself) and the targets
the proxy allows (hosts and ports, no secret), and where the jail's folder
is (a short temporary path: a Unix socket's path is limited to 108 bytes).
The daemon that adopts the builder takes the digest back and starts the
proxy again on the same socket, in the folder the jail sees; the folder is
owned by the builder's launcher meanwhile, so a starting daemon's sweep of
jail folders left by dead daemons keeps it while the builder runs.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
from pathlib import Path

from butler.processes import owner_mark
from butler.sandbox.egress import Egress, Target
from butler.sandbox.folders import OWNER_FILE
from butler.sandbox.jail import Jail
from butler.sandbox.policy import EGRESS_SOCKET, JailPolicy
from butler.security.private_files import write_private
from butler.security.session_tokens import SessionTokens

log = logging.getLogger(__name__)

#: In the builder's folder: the jail's folder, what its proxy allows, the token's digest.
JAIL_FILE = "jail.json"
TOKEN_FILE = "token.sha256"
#: Most targets read back (a jail allows a handful).
MAX_TARGETS = 1000


def _private_dir(path: Path) -> bool:
    """A real folder of this user's that no one else may enter (as the jail made it)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def remember(folder: Path, session_id: str, tokens: SessionTokens, jail: Jail | None) -> None:
    """Write what an adopting daemon needs into the builder's private ``folder``."""
    digest = tokens.digest(session_id)
    if digest is not None:
        write_private(folder / TOKEN_FILE, digest)
    if jail is not None:
        targets = sorted([t.host, t.port] for t in jail.egress.allowed)
        where = str(jail.egress.socket_path.parent.parent)
        write_private(folder / JAIL_FILE, json.dumps({"folder": where, "allowed": targets}))


def hand_over(jail: Jail | None, pid: int | None) -> None:
    """Make the builder's runtime (its launcher, ``pid``) the owner of its jail's folder.

    A starting daemon sweeps jail folders whose owner is gone; this one must
    outlive the daemon that made it, for as long as the builder runs.
    """
    if jail is not None and pid is not None:
        folder = jail.egress.socket_path.parent.parent
        write_private(folder / OWNER_FILE, owner_mark(pid))


async def restore(
    folder: Path, session_id: str, tokens: SessionTokens, label: str = ""
) -> Jail | None:
    """Take the builder's token back and restart its jail's proxy; the jail, if it has one."""
    try:
        digest = (folder / TOKEN_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        digest = ""
    if digest and not tokens.adopt(session_id, digest):
        log.warning("builder session %s: its token digest is unreadable", session_id)
    try:
        raw = json.loads((folder / JAIL_FILE).read_text(encoding="utf-8"))
        allowed = frozenset(Target(str(h), int(p)) for h, p in raw["allowed"][:MAX_TARGETS])
        egress_dir = Path(raw["folder"]) / "egress"
    except (OSError, ValueError, TypeError, KeyError):
        return None  # not jailed
    if not _private_dir(egress_dir):
        log.warning(
            "builder session %s: its jail folder %s is gone or not private; "
            "its runtime has no way out",
            session_id,
            egress_dir,
        )
        return None
    egress = await Egress(egress_dir / EGRESS_SOCKET, allowed, label).start()
    return Jail(JailPolicy(egress_dir=egress_dir), egress, proxy_port=0, forwards=())


def forget(folder: Path) -> None:
    """Remove the jail folder of a builder that ended while no daemon held its proxy."""
    try:
        where = Path(json.loads((folder / JAIL_FILE).read_text(encoding="utf-8"))["folder"])
    except (OSError, ValueError, TypeError, KeyError):
        return
    if _private_dir(where) and where.name.startswith("butler-jail-"):
        shutil.rmtree(where, ignore_errors=True)
