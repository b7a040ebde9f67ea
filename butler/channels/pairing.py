"""One-time pairing codes: what ``butler channels pair`` prints and a person sends back.

A code is ten characters of Crockford's base32 (50 bits: no I, L, O or U to
misread), shown as ``ABCDE-FGHJK``. Only its SHA-256 digest is stored, so
reading the database does not give a usable code; it expires within minutes
and pairs one sender once.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta

from butler.store.channel_senders import SenderStore

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
LENGTH = 10
#: How long a code printed by ``butler channels pair`` stays good, by default.
DEFAULT_MINUTES = 10
#: A message that is a code, maybe after ``/pair`` or ``/start``, maybe in lower case.
_CODE = re.compile(r"^\s*(?:/(?:pair|start)(?:@\w+)?\s+)?([0-9A-Za-z]{5})-?([0-9A-Za-z]{5})\s*$")
#: Letters people type for the digits they stand for.
_READ_AS = str.maketrans({"O": "0", "I": "1", "L": "1"})


def new_code() -> str:
    """A fresh random code, formatted for a person to type."""
    raw = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
    return f"{raw[:5]}-{raw[5:]}"


def digest(code: str) -> str:
    """What the database keeps of a code (its normalised form, hashed)."""
    normal = code.replace("-", "").upper().translate(_READ_AS)
    return hashlib.sha256(f"butler-pairing:{normal}".encode()).hexdigest()


def code_in(text: str) -> str | None:
    """The code a message carries, when the whole message is one."""
    match = _CODE.match(text)
    return f"{match[1]}-{match[2]}" if match else None


async def issue(
    senders: SenderStore, channel: str, minutes: int = DEFAULT_MINUTES
) -> tuple[str, datetime]:
    """Store a new code for ``channel``; the code and when it expires."""
    code = new_code()
    expires = datetime.now(UTC) + timedelta(minutes=minutes)
    await senders.add_code(channel, digest(code), expires)
    return code, expires
