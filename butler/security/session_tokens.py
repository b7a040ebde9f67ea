"""A capability per runtime session: a random token bound to one session id.

The spawner issues a token when it builds a session's MCP endpoint and
revokes it when the session ends. The server resolves a presented token to
its session id; nothing a runtime sends besides the token (a session header,
a query parameter) says who it is. Tokens are kept only as SHA-256 digests,
so looking one up reveals nothing through timing about the others.

A session a worker runs has a token the worker minted when it claimed the
session (the job in the queue carries none): the database holds only its digest,
on the claimed row, and :meth:`SessionTokens.resolve_claimed` honours it while
that row is open (``lookup``, set by a butler whose sessions may run on workers).
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def digest_hex(token: str) -> str:
    """What is kept of a token where others may read it: its SHA-256, in hex."""
    return _digest(token).hex()


class SessionTokens:
    """Issue, resolve and revoke the tokens of one butler's running sessions."""

    def __init__(self) -> None:
        self._sessions: dict[bytes, str] = {}
        self._digests: dict[str, bytes] = {}
        #: The open session a worker claimed with a token of this digest (hex), if any.
        self.lookup: Callable[[str], Awaitable[str | None]] | None = None

    def issue(self, session_id: str) -> str:
        """A fresh token for ``session_id``; one issued before for it stops working."""
        self.revoke(session_id)
        token = secrets.token_urlsafe(32)
        digest = _digest(token)
        self._sessions[digest] = session_id
        self._digests[session_id] = digest
        return token

    def resolve(self, token: str) -> str | None:
        """The session id ``token`` was issued to, while that session runs."""
        return self._sessions.get(_digest(token))

    async def resolve_claimed(self, token: str) -> str | None:
        """The session a worker claimed with ``token`` (minted at its pickup), while its
        row is open; honoured here from then on. None when no lookup is set, or the
        database cannot say."""
        if self.lookup is None:
            return None
        digest = digest_hex(token)
        try:
            session_id = await self.lookup(digest)
        except Exception as exc:  # the database away: the call is refused, as any unknown
            log.warning("a worker's session token not looked up: %s", type(exc).__name__)
            return None
        if session_id is not None:
            self.adopt(session_id, digest)
        return session_id

    def revoke(self, session_id: str) -> None:
        """The session ended: its token opens nothing from now on."""
        digest = self._digests.pop(session_id, None)
        if digest is not None:
            self._sessions.pop(digest, None)

    def digest(self, session_id: str) -> str | None:
        """The hex digest of ``session_id``'s token (worth keeping: it opens nothing)."""
        digest = self._digests.get(session_id)
        return digest.hex() if digest is not None else None

    def adopt(self, session_id: str, digest: str) -> bool:
        """A session that outlived an earlier daemon: its token, known by its digest, works
        again here. False for a digest that is not one."""
        try:
            raw = bytes.fromhex(digest)
        except ValueError:
            return False
        if len(raw) != hashlib.sha256().digest_size:
            return False
        self.revoke(session_id)
        self._sessions[raw] = session_id
        self._digests[session_id] = raw
        return True

    def __len__(self) -> int:
        return len(self._sessions)
