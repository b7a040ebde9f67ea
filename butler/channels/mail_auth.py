"""Whether an email comes from whom its From line names: a DKIM signature of that domain.

A From line is text anyone can write. A sender counts as proven only when
the message carries a DKIM signature that verifies here (dkimpy; the key
looked up in DNS through the configured resolver) and whose signing domain
is aligned with the From domain as DMARC means it: the same organisational
domain (by the Public Suffix List), or the very same domain when the
domain's DMARC record asks for strict alignment (``adkim=s``). A signature
covering only part of the body (``l=``) proves nothing: text could follow it.

A trusted receiving server's verdict (``verified_by``) counts too, read
from the topmost Authentication-Results header carrying its authserv-id
only: the server adds its header on top, and anything below may have come
with the message from whoever wrote it. A verdict holding a failure refuses
the message whatever else passed; its pass counts for nothing when the message
carries an ``l=`` signature, which a server passes whatever follows the signed part.
A signature whose ``h=`` leaves out From is ignored, as RFC 6376 asks.

A signature proves who wrote a message, not who sent it now: a genuine signed
mail re-sent later by someone else verifies all the same. So a message dated
more than :data:`MAX_AGE_DAYS` ago is not proven, and a proof names the
signature that verified (:attr:`Proof.signature`, a digest of its ``b=``), by
which the inbox refuses a message whose signature it has seen before from the
same sender (docs/security.md).

:func:`prove` does blocking DNS: the channel runs it in a thread.
"""

from __future__ import annotations

import email.utils
import functools
import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import Message

import dkim
import dns.exception
import dns.resolver
from publicsuffixlist import PublicSuffixList

from butler.channels.mail_format import parse, sender_of
from butler.config.channels import resolver_address

log = logging.getLogger(__name__)

#: Signatures tried per message, at most (each costs a DNS lookup and a verification).
MAX_SIGNATURES = 5
#: Seconds one DNS lookup may take.
DNS_TIMEOUT_S = 5.0
#: A proven message dated longer ago than this is refused: an old one sent again.
MAX_AGE_DAYS = 7
#: Results of a trusted verdict that refuse the message, whichever method said them.
FAILED = frozenset({"fail", "permerror"})

#: TXT records at a DNS name, each as bytes (empty when there are none).
Txt = Callable[[str], list[bytes]]


class DnsUnavailable(Exception):
    """The resolver could not be asked (no configuration, a timeout)."""


@dataclass(frozen=True)
class Proof:
    """Whether a message's sender is proven, and how (or why not), in one line."""

    proven: bool
    reason: str
    #: A digest of the DKIM signature that verified ("" when none did here): the same
    #: message sent again carries the same one.
    signature: str = ""


def prove(raw: bytes, verified_by: str | None, txt: Txt, now: datetime | None = None) -> Proof:
    """Whether ``raw``'s From address is proven: by its own aligned DKIM signature, or by
    ``verified_by``'s topmost verdict; a verdict with a failure in it refuses it, and so
    does a Date more than :data:`MAX_AGE_DAYS` before ``now``."""
    proof = _prove(raw, verified_by, txt)
    if not proof.proven:
        return proof
    dated = _date(parse(raw))
    oldest = (now or datetime.now(UTC)) - timedelta(days=MAX_AGE_DAYS)
    if dated is not None and dated < oldest:
        when = dated.strftime("%Y-%m-%d")
        return Proof(False, f"it is dated {when}, over {MAX_AGE_DAYS} days ago: sent again?")
    return proof


def _date(message: Message) -> datetime | None:
    """The message's Date, when it has one that reads (a Date the signature does not cover
    could be anything, and then only the signature's digest catches a replay)."""
    try:
        dated = email.utils.parsedate_to_datetime(str(message.get("Date", "")))
    except (TypeError, ValueError, IndexError):
        return None
    return dated if dated.tzinfo is not None else dated.replace(tzinfo=UTC)


def _prove(raw: bytes, verified_by: str | None, txt: Txt) -> Proof:
    message = parse(raw)
    sender = sender_of(message)
    if sender is None:
        return Proof(False, "the message has no single From address")
    domain = _ascii(sender.rsplit("@", 1)[1])
    verdict = trusted_verdict(message, verified_by, domain) if verified_by else None
    if verdict is not None and not verdict.proven:
        return verdict
    if verdict is not None and _signs_part(message):
        # A server's dkim=pass (and the dmarc=pass on it) holds for an l= signature
        # whatever follows the signed part, and its header does not say which
        # signature passed: only the daemon's own check, which refuses l=, may prove it.
        verdict = None
    own = dkim_proof(raw, domain, txt)
    if own.proven or verdict is None:
        return own
    return verdict


def trusted_verdict(message: Message, authserv: str, domain: str) -> Proof | None:
    """What ``authserv``'s topmost Authentication-Results says of the From ``domain``:
    refused on any failure, proven on DMARC or aligned DKIM passing, else None."""
    for header in message.get_all("Authentication-Results", []):
        server, results = parse_results(str(header))
        if server != authserv.lower():
            continue
        failed = [f"{method}={result}" for method, result, _ in results if result in FAILED]
        if failed:
            return Proof(False, f"{authserv} says {', '.join(failed)}")
        for method, result, props in results:
            if result != "pass":
                continue
            if method == "dmarc" and props.get("header.from") == domain:
                return Proof(True, f"{authserv} says dmarc=pass for {domain}")
            signer = props.get("header.d") or props.get("header.i", "").rpartition("@")[2]
            if method == "dkim" and signer and aligned(signer, domain, strict=False):
                return Proof(True, f"{authserv} says dkim=pass for {signer}")
        return None  # only the topmost header of the server counts
    return None


def parse_results(header: str) -> tuple[str, list[tuple[str, str, dict[str, str]]]]:
    """An Authentication-Results header (RFC 8601): its authserv-id and, per result, the
    method, the result and its properties (``header.from`` and so on), all lower-cased."""
    parts = _split(_uncommented(header).lower())
    head = parts[0].split() if parts else []
    results = []
    for part in parts[1:]:
        words = re.sub(r"\s*([=/])\s*", r"\1", part).split()
        if not words or "=" not in words[0]:
            continue
        method, _, result = words[0].partition("=")
        props = {}
        for word in words[1:]:
            name, _, value = word.partition("=")
            if "." in name and value:
                props[name] = value.strip('"')
        results.append((method.split("/")[0], result, props))
    return (head[0] if head else ""), results


def dkim_proof(raw: bytes, domain: str, txt: Txt) -> Proof:
    """Whether one of ``raw``'s DKIM signatures verifies and is aligned with ``domain``."""
    try:
        checker = dkim.DKIM(raw, logger=log, timeout=int(DNS_TIMEOUT_S))
    except dkim.DKIMException as exc:  # a header DKIM cannot read: nothing it could prove
        return Proof(False, f"its headers cannot be read for DKIM ({str(exc)[:60]})")
    count = sum(1 for name, _ in checker.headers if name.lower() == b"dkim-signature")
    if count == 0:
        return Proof(False, f"it carries no DKIM signature (From {domain})")
    strict = functools.cache(lambda: _strict(domain, txt))
    tried = []
    for index in range(min(count, MAX_SIGNATURES)):
        try:
            good = checker.verify(idx=index, dnsfunc=lambda name, timeout=5: _key(txt, name))
        except dkim.ValidationError as exc:  # a hash that does not match, a key refused
            why = str(exc).split(" (")[0][:80]
            tried.append(f"the signature of {_text(checker.domain)} does not verify ({why})")
            continue
        except dkim.DKIMException as exc:
            tried.append(f"a signature is malformed ({str(exc).split(' (')[0][:80]})")
            continue
        signer = _text(checker.domain)
        if not good:
            tried.append(f"the signature of {signer} does not verify")
        elif b"from" not in checker.include_headers:
            # RFC 6376 6.1.1: such a signature is ignored (dkimpy verifies it all the
            # same); a From line under it is anyone's.
            tried.append(f"the signature of {signer} does not cover the From line")
        elif b"l" in checker.signature_fields:
            tried.append(f"the signature of {signer} covers part of the body only")
        elif not aligned(signer, domain, strict=signer != domain and strict()):
            tried.append(f"the signature of {signer} is not of {domain}")
        else:
            signed = b"".join(checker.signature_fields.get(b"b", b"").split())
            digest = hashlib.sha256(signed).hexdigest()
            return Proof(True, f"DKIM signature of {signer} verified for From {domain}", digest)
    return Proof(False, "; ".join(tried))


def _signs_part(message: Message) -> bool:
    """Whether a DKIM-Signature of ``message`` has an ``l=`` tag (covers part of the body)."""
    signatures = message.get_all("DKIM-Signature", [])
    return any(re.search(r"(?:^|;)\s*l\s*=", " ".join(str(s).split())) for s in signatures)


def aligned(signer: str, domain: str, *, strict: bool) -> bool:
    """Whether a signing domain is aligned with the From domain (DMARC, RFC 7489 3.1.1)."""
    signer, domain = signer.lower().rstrip("."), domain.lower().rstrip(".")
    if strict or signer == domain:
        return signer == domain
    org = _psl().privatesuffix(domain)
    return org is not None and org == _psl().privatesuffix(signer)


def txt_lookup(resolver: str | None) -> Txt:
    """TXT lookups through ``resolver`` (``IP`` or ``IP:PORT``), else the system's."""
    asking = dns.resolver.Resolver(configure=resolver is None)
    if resolver is not None:
        address, port = resolver_address(resolver)
        asking.nameservers = [address]
        asking.port = port

    def lookup(name: str) -> list[bytes]:
        try:
            answer = asking.resolve(
                name, "TXT", lifetime=DNS_TIMEOUT_S, search=False, raise_on_no_answer=False
            )
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return []
        except (dns.exception.Timeout, dns.resolver.NoNameservers) as exc:
            raise DnsUnavailable(f"{name}: {exc}") from None
        return [b"".join(record.strings) for record in answer.rrset or []]

    return lookup


def system_txt() -> Txt:
    """TXT lookups through the system's resolver (``/etc/resolv.conf``), made at first use."""
    made: list[Txt] = []

    def lookup(name: str) -> list[bytes]:
        if not made:
            try:
                made.append(txt_lookup(None))
            except dns.resolver.NoResolverConfiguration as exc:
                raise DnsUnavailable(f"no DNS resolver configured: {exc}") from None
        return made[0](name)

    return lookup


def _key(txt: Txt, name: bytes) -> bytes | None:
    """dkimpy's ``dnsfunc``: the DKIM key record at ``name``."""
    try:
        records = txt(_text(name).rstrip("."))
    except DnsUnavailable as exc:
        raise dkim.DnsTimeoutError(str(exc)) from None
    keys = [r for r in records if r.lstrip().lower().startswith(b"v=dkim1")]
    return (keys or records or [None])[0]


def _strict(domain: str, txt: Txt) -> bool:
    """Whether the domain's DMARC record (or its organisation's) asks for strict DKIM
    alignment; an unreachable record counts as strict, the safer reading."""
    org = _psl().privatesuffix(domain)
    for name in dict.fromkeys(d for d in (domain, org) if d):
        try:
            records = [r for r in txt(f"_dmarc.{name}") if r.lower().startswith(b"v=dmarc1")]
        except DnsUnavailable:
            return True
        if records:
            tags = dict(_tag(t) for t in _text(records[0]).split(";"))
            return tags.get("adkim", "r").lower() == "s"
    return False


def _tag(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    return name.strip().lower(), value.strip()


@functools.cache
def _psl() -> PublicSuffixList:
    return PublicSuffixList()


def _text(value: bytes | str | None) -> str:
    if isinstance(value, bytes):
        return value.decode("ascii", "replace").lower()
    return (value or "").lower()


def _ascii(domain: str) -> str:
    try:
        return domain.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return domain.lower()


def _uncommented(text: str) -> str:
    """``text`` without RFC 5322 comments (nested parentheses), quoted strings kept."""
    out, depth, quoted, escaped = [], 0, False, False
    for char in text:
        if escaped:
            escaped = False
            if depth == 0:
                out.append(char)
            continue
        if char == "\\":
            escaped = True
            if depth == 0:
                out.append(char)
        elif quoted:
            out.append(char)
            quoted = char != '"'
        elif char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif depth == 0:
            out.append(char)
            quoted = char == '"'
    return "".join(out)


def _split(text: str) -> list[str]:
    """``text`` split at semicolons outside quoted strings."""
    parts, current, quoted = [], [], False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == ";" and not quoted:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts]
