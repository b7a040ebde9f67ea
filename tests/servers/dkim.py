"""A domain's DKIM key as its mail provider holds it: sign outgoing mail, publish the key.

key = DkimKey("home.test")
signed = key.sign(raw)          # the message with its DKIM-Signature on top
key.records()                   # {"mail._domainkey.home.test": b"v=DKIM1; k=rsa; p=..."}
txt = dns(key)                  # a TXT lookup answering from the keys' records
"""

from __future__ import annotations

import base64
import email
from collections.abc import Callable

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

#: What a provider signs: enough that the message cannot be re-addressed or rewritten.
SIGNED = [b"from", b"to", b"subject", b"date", b"message-id", b"in-reply-to", b"references"]


class DkimKey:
    """An RSA key of ``domain`` under ``selector``."""

    def __init__(self, domain: str, selector: str = "mail") -> None:
        self.domain = domain
        self.selector = selector
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def sign(self, raw: bytes, *, length: bool = False) -> bytes:
        """``raw`` with this key's signature on top (``length``: with an ``l=`` tag)."""
        pem = self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        present = {name.lower().encode() for name in email.message_from_bytes(raw).keys()}
        headers = [h for h in SIGNED if h in present]
        signature = dkim.sign(
            raw,
            self.selector.encode(),
            self.domain.encode(),
            pem,
            include_headers=headers,
            length=length,
        )
        return signature + raw

    @property
    def name(self) -> str:
        return f"{self.selector}._domainkey.{self.domain}"

    def record(self) -> bytes:
        public = self._key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return b"v=DKIM1; k=rsa; p=" + base64.b64encode(public)

    def records(self) -> dict[str, bytes]:
        """The TXT records its domain publishes for it."""
        return {self.name: self.record()}


def dns(*keys: DkimKey, **extra: bytes) -> Callable[[str], list[bytes]]:
    """TXT lookups answering from ``keys``' records and ``extra`` (``_dmarc__home__test=``
    for ``_dmarc.home.test``), as a resolver would; nothing else exists."""
    records = {name: value for key in keys for name, value in key.records().items()}
    records.update({name.replace("__", "."): value for name, value in extra.items()})
    return lambda name: [records[name]] if name in records else []
