"""What a builder needs to keep working after its daemon restarts.

A builder's runtime outlives the daemon in tmux, but two things of it live in
the daemon: its session token (the server knows it by its digest only) and,
when jailed, its egress proxy (the jail's only way out, the butler's MCP
server included). Both are written to the builder's private folder when it
starts: the token's digest (which opens nothing by itself) and the targets
the proxy allows (hosts and ports, no secret). The daemon that adopts the
builder takes the digest back and starts the proxy again on the same socket,
in the folder the jail sees.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from butler.sandbox.egress import Egress, Target
from butler.sandbox.jail import Jail
from butler.sandbox.policy import EGRESS_SOCKET, JailPolicy
from butler.security.session_tokens import SessionTokens

log = logging.getLogger(__name__)

#: In the builder's folder: the jail's folder (its egress socket, launch scripts).
JAIL_DIR = "jail"
TARGETS_FILE = "egress.json"
TOKEN_FILE = "token.sha256"
#: Most targets read back (a jail allows a handful).
MAX_TARGETS = 1000


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def remember(folder: Path, session_id: str, tokens: SessionTokens, jail: Jail | None) -> None:
    """Write what an adopting daemon needs into the builder's private ``folder``."""
    digest = tokens.digest(session_id)
    if digest is not None:
        _write_private(folder / TOKEN_FILE, digest)
    if jail is not None:
        targets = sorted([t.host, t.port] for t in jail.egress.allowed)
        _write_private(folder / JAIL_DIR / TARGETS_FILE, json.dumps(targets))


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
        raw = json.loads((folder / JAIL_DIR / TARGETS_FILE).read_text(encoding="utf-8"))
        allowed = frozenset(Target(str(h), int(p)) for h, p in raw[:MAX_TARGETS])
    except (OSError, ValueError, TypeError):
        return None  # not jailed (or its folder is gone: nothing can reach it anyway)
    egress_dir = folder / JAIL_DIR / "egress"
    egress = await Egress(egress_dir / EGRESS_SOCKET, allowed, label).start()
    return Jail(JailPolicy(egress_dir=egress_dir), egress, proxy_port=0, forwards=())
