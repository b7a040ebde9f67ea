"""What a browser logs in with: a signed cookie, one-time tickets, and where to go after.

The cookie never holds the owner token. It holds an expiry and an HMAC of it,
keyed by a key derived from the owner token: a stolen cookie dies on its own
after :data:`COOKIE_LIFETIME`, and rotating the token (``butler token
--rotate``) ends every cookie and ticket at once, with no list of sessions
to keep.

A ticket is how one login covers a roster: the roster page, which can read
each butler's token, links to each butler with a ticket that butler can
check (an expiry, a nonce and an HMAC under the butler's own key). The
butler redeems it once, sets its own cookie, and forgets it at its expiry.
What it redeemed is kept in a private file of its data folder as well, so a
ticket seen once (in a browser's history, a proxy's log) stays used after a
restart of the daemon.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from butler.paths import Install, butler_dir
from butler.security.private_files import replace_private

log = logging.getLogger(__name__)

#: How long a login lasts in the browser, restarts included.
COOKIE_LIFETIME_S = 30 * 24 * 3600
#: How long a roster page's link to a butler logs in (the page renews its links as it polls).
TICKET_LIFETIME_S = 10 * 60
#: At most this many unexpired tickets are remembered as used; past it the oldest go.
MAX_REDEEMED = 10_000
#: In a butler's data folder: the tickets it redeemed that have not expired yet.
TICKETS_FILE = "login_tickets"
_VERSION = "v1"
_TICKET = re.compile(r"^(\d{1,12})\.([A-Za-z0-9_-]{16,64})\.([0-9a-f]{64})$")
_COOKIE = re.compile(r"^v1\.(\d{1,12})\.([0-9a-f]{64})$")
_NONCE = re.compile(r"[A-Za-z0-9_-]{16,64}")


@functools.lru_cache(maxsize=32)  # one derivation per token, not one per request
def _key(owner_token: str, purpose: str) -> bytes:
    return hmac.new(owner_token.encode(), f"butler-login-{purpose}".encode(), "sha256").digest()


def _mac(key: bytes, message: str) -> str:
    return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()


def issue_cookie(owner_token: str, now: float | None = None) -> str:
    """A login cookie's value, good for :data:`COOKIE_LIFETIME_S` from ``now``."""
    expires = int((now or time.time()) + COOKIE_LIFETIME_S)
    body = f"{_VERSION}.{expires}"
    return f"{body}.{_mac(_key(owner_token, 'cookie'), body)}"


def cookie_valid(value: str | None, owner_token: str, now: float | None = None) -> bool:
    """Whether ``value`` is a cookie :func:`issue_cookie` made with this token, not expired."""
    match = _COOKIE.match(value or "")
    if match is None:
        return False
    expected = _mac(_key(owner_token, "cookie"), f"{_VERSION}.{match.group(1)}")
    if not hmac.compare_digest(match.group(2), expected):
        return False
    return int(match.group(1)) > (now or time.time())


def mint_ticket(owner_token: str, audience: str, now: float | None = None) -> str:
    """A one-time login ticket for the butler named ``audience``, whose owner token is
    ``owner_token``.

    The name is in what the HMAC covers: butlers started with one ``BUTLER_TOKEN`` (a
    compose file's) share a key, and each keeps its own redeemed tickets, so a ticket
    not bound to its butler would log in once at each of them.
    """
    expires = int((now or time.time()) + TICKET_LIFETIME_S)
    nonce = secrets.token_urlsafe(18)
    return f"{expires}.{nonce}.{_ticket_mac(owner_token, audience, expires, nonce)}"


def _ticket_mac(owner_token: str, audience: str, expires: int, nonce: str) -> str:
    return _mac(_key(owner_token, "ticket"), f"{audience}\0{expires}.{nonce}")


def tickets_path(butler: Install) -> Path:
    """Where the butler install keeps the login tickets it redeemed."""
    return butler_dir(butler) / TICKETS_FILE


class Tickets:
    """The tickets one butler has redeemed, each refused after its first use.

    With ``store`` (a file of the daemon's data folder), what was redeemed and has
    not expired is written there before a ticket is accepted, and read back when
    the daemon starts: one ``<expiry> <nonce>`` line each, at most
    :data:`MAX_REDEEMED`, the expired ones dropped at each write. A ticket whose
    use could not be written is refused: a replay must never pass for want of a disk.
    """

    def __init__(
        self,
        store: Path | None = None,
        clock: Callable[[], float] = time.time,
        audience: str = "",
    ) -> None:
        """``audience``: the butler's name, which a ticket for it was made with."""
        self.clock = clock
        self.store = store
        self.audience = audience
        # Redeemed from a thread (the write is off the event loop): one at a time.
        self._lock = threading.Lock()
        self._redeemed: dict[str, int] = self._load(store) if store else {}

    def redeem(self, ticket: str, owner_token: str) -> bool:
        """Whether ``ticket`` is good for this butler and unused; it is used up either way.

        With a store this writes a file: call it off the event loop.
        """
        match = _TICKET.match(ticket)
        if match is None:
            return False
        expires, nonce, mac = int(match.group(1)), match.group(2), match.group(3)
        expected = _ticket_mac(owner_token, self.audience, expires, nonce)
        if not hmac.compare_digest(mac, expected):
            return False
        with self._lock:
            now = self.clock()
            self._forget_expired(now)
            if expires <= now or expires > now + TICKET_LIFETIME_S + 60:
                return False
            if nonce in self._redeemed or len(self._redeemed) >= MAX_REDEEMED:
                # Past the bound the oldest still count as used: refuse rather than
                # let one be replayed.
                return False
            self._redeemed[nonce] = expires
            return self._save()

    def _forget_expired(self, now: float) -> None:
        for nonce in [n for n, expires in self._redeemed.items() if expires <= now]:
            del self._redeemed[nonce]

    def _load(self, store: Path) -> dict[str, int]:
        """What an earlier daemon redeemed and has not expired (nothing when there is no file).

        The file is the daemon's own (its data folder is never in a jail); a line that
        does not read as one is skipped.
        """
        try:
            text = store.read_text(encoding="ascii", errors="replace")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            log.warning("could not read the redeemed login tickets (%s): %s", store, exc)
            return {}
        now, found = self.clock(), {}
        for line in text.splitlines()[:MAX_REDEEMED]:
            expires, _, nonce = line.partition(" ")
            if expires.isdigit() and _NONCE.fullmatch(nonce) and int(expires) > now:
                found[nonce] = int(expires)
        return found

    def _save(self) -> bool:
        """Write what is redeemed now (replaced whole); False when it could not be."""
        if self.store is None:
            return True
        lines = "".join(f"{expires} {nonce}\n" for nonce, expires in self._redeemed.items())
        try:
            replace_private(self.store, lines)
        except OSError as exc:
            log.warning("login ticket refused: could not note its use in %s: %s", self.store, exc)
            return False
        return True


def safe_next(target: str | None) -> str:
    """``target`` when it is a path on this site, else ``/``: the login never sends elsewhere.

    A browser reads ``//host``, ``/\\host`` and control characters inside a path as
    another site, so only a plain absolute path (with its query) passes.
    """
    if not target or len(target) > 2000 or not target.startswith("/"):
        return "/"
    if target.startswith(("//", "/\\")) or any(ord(c) < 0x21 or c == "\\" for c in target):
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return "/"
    return target
