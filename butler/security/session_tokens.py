"""A capability per runtime session: a random token bound to one session id.

The spawner issues a token when it builds a session's MCP endpoint and
revokes it when the session ends. The server resolves a presented token to
its session id; nothing a runtime sends besides the token (a session header,
a query parameter) says who it is. Tokens are kept only as SHA-256 digests,
so looking one up reveals nothing through timing about the others.
"""

from __future__ import annotations

import hashlib
import secrets


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class SessionTokens:
    """Issue, resolve and revoke the tokens of one butler's running sessions."""

    def __init__(self) -> None:
        self._sessions: dict[bytes, str] = {}
        self._digests: dict[str, bytes] = {}

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

    def honour(self, session_id: str, token: str) -> None:
        """A token an earlier daemon issued to ``session_id`` (a worker's runtime still
        holds it, from the session's job): it works again here."""
        self.adopt(session_id, _digest(token).hex())

    def __len__(self) -> int:
        return len(self._sessions)
