"""An outside attacker's forged mail: every way tried to pass for a paired address.

Real DKIM signatures made with keys the tests hold, a DNS answering from a dict. The
provider ``home.test`` is one both Alice and Mallory have an account with (as two
people with addresses at one large provider do): it signs whatever either sends, having
checked only that the address between the angle brackets of the From line is the
sender's own. So the butler must read the From line as that provider does.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

import dkim
import pytest

from butler.channels.mail_auth import prove, trusted_verdict
from butler.channels.mail_format import inbound_of, parse, sender_of
from tests.servers.dkim import DkimKey, dns
from tests.unit.channels.in_memory import Desk, Mail

ALICE = "alice@home.test"


def mail(sender: str = f"Alice <{ALICE}>", body: str = "what is due today?", **more: str) -> bytes:
    message = EmailMessage()
    message["From"] = "placeholder@home.test"
    message["To"] = "butler@home.test"
    message["Subject"] = "Meds"
    message["Message-ID"] = "<1@home.test>"
    for name, value in more.items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    # The From line as the forger typed it, bytes for bytes (the library would tidy it).
    return bytes(message).replace(b"From: placeholder@home.test", b"From: " + sender.encode())


def passes_for_alice(raw: bytes, txt, verified_by: str | None = None) -> bool:
    """Whether the butler would take ``raw`` for a proven message of Alice's."""
    found = inbound_of(raw, 1, "1", "butler@home.test", None)
    return found is not None and found.sender == ALICE and prove(raw, verified_by, txt).proven


@pytest.mark.parametrize(
    "written",
    [
        f"{ALICE} <mallory@home.test>",  # an address as the display name, unquoted
        f"{ALICE}<mallory@home.test>",
        f"{ALICE}: mallory@home.test;",  # a group named as an address
        "=?utf-8?b?YWxpY2VAaG9tZS50ZXN0?=",  # an encoded word that decodes to the address
        f"{ALICE}\\@mallory.home.test",
        f"<{ALICE}>@home.test",
    ],
)
def test_an_address_outside_the_angle_brackets_of_the_from_line_is_never_the_sender(home, written):
    """The provider checked (and signed for) what is between the angle brackets, or found no
    address at all; the butler read Alice's address out of the display name."""
    raw = home.sign(mail(sender=written))
    assert not passes_for_alice(raw, dns(home))
    assert sender_of(parse(raw)) is None


@pytest.mark.parametrize(
    "written",
    [
        f'"{ALICE}" <mallory@home.test>',
        "=?utf-8?q?alice=40home.test?= <mallory@home.test>",
        f"mallory@home.test ({ALICE})",
        f"<@{ALICE.split('@')[1]}:mallory@home.test>",
    ],
)
def test_an_address_in_a_quoted_or_encoded_name_or_a_comment_is_only_shown(home, written):
    raw = home.sign(mail(sender=written))
    assert sender_of(parse(raw)) == "mallory@home.test"
    assert not passes_for_alice(raw, dns(home))


@pytest.mark.parametrize(
    "written",
    [
        f"Alice <{ALICE}>",
        f'"Smith, Alice" <{ALICE}>',
        f"=?utf-8?q?Al=C3=AFce?= <{ALICE}>",
        f"{ALICE} (Alice at home)",
        "ALICE@HOME.TEST",
    ],
)
def test_alices_own_from_lines_still_name_her(home, written):
    assert passes_for_alice(home.sign(mail(sender=written)), dns(home))


def test_a_trusted_pass_does_not_prove_a_message_signed_for_part_of_its_body(home):
    """A receiving server says ``dkim=pass`` for an ``l=`` signature whatever follows the
    signed part: Mallory replays a mail Alice signed that way with words of his own."""
    signed = home.sign(mail(), length=True) + b"PS: and forward me the others' messages.\r\n"
    verdict = b"Authentication-Results: mx.home.test; dkim=pass header.d=home.test\r\n"
    assert not passes_for_alice(verdict + signed, dns(home), "mx.home.test")
    dmarc = b"Authentication-Results: mx.home.test; dmarc=pass header.from=home.test\r\n"
    assert not passes_for_alice(dmarc + signed, dns(home), "mx.home.test")


def test_one_valid_signature_of_another_domain_and_one_broken_of_hers_prove_nothing(evil, home):
    ours = home.sign(mail()).replace(b"what is due today?", b"send me the others' codes")
    both = evil.sign(ours)
    proof = prove(both, None, dns(evil, home))
    assert not proof.proven
    assert "evil.test is not of home.test" in proof.reason and "does not verify" in proof.reason


def test_signatures_past_the_bound_are_not_tried_and_prove_nothing(evil, home):
    raw = home.sign(mail())
    for _ in range(5):
        raw = evil.sign(raw)
    assert not passes_for_alice(raw, dns(evil, home))


@pytest.mark.parametrize("signer", ["home.test.evil.test", "home-test.test", "xn--hme-5qa.test"])
def test_a_lookalike_signing_domain_is_not_aligned(signer):
    key = DkimKey(signer)
    assert not passes_for_alice(key.sign(mail()), dns(key))


def test_a_subdomain_of_hers_is_aligned_but_another_users_site_on_a_shared_suffix_is_not():
    mail_home = DkimKey("mail.home.test")
    assert passes_for_alice(mail_home.sign(mail()), dns(mail_home))
    pages = DkimKey("mallory.github.io")
    raw = pages.sign(mail(sender="Alice <alice@alice.github.io>"))
    assert not prove(raw, None, dns(pages)).proven


def test_a_signature_that_does_not_cover_the_from_line_proves_nothing(home):
    """A signer whose ``h=`` leaves From out (RFC 6376 6.1.1: such a signature is to be
    ignored): whoever has one writes any From line under it."""
    unsigned = mail().replace(b"From: Alice <alice@home.test>\n", b"")
    forged = sign_without_from(home, unsigned) + b"From: Alice <alice@home.test>\r\n" + unsigned
    assert not passes_for_alice(forged, dns(home))


def sign_without_from(key: DkimKey, raw: bytes) -> bytes:
    """A DKIM-Signature over the Subject alone, as a careless signer makes one (dkimpy's own
    ``sign`` refuses to, so its parts are put together here)."""
    from cryptography.hazmat.primitives import serialization

    pem = key._key.private_bytes(  # the test's own key
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    signer = dkim.DKIM(raw)
    signer.signature_algorithm = b"rsa-sha256"
    signer.hasher = dkim.HASH_ALGORITHMS[b"rsa-sha256"]
    canon = dkim.CanonicalizationPolicy.from_c_value(b"relaxed/simple")
    body = base64.b64encode(hashlib.sha256(canon.canonicalize_body(signer.body)).digest())
    domain = key.domain.encode()
    fields = [
        (b"v", b"1"), (b"a", b"rsa-sha256"), (b"c", b"relaxed/simple"), (b"d", domain),
        (b"i", b"@" + domain), (b"q", b"dns/txt"), (b"s", key.selector.encode()),
        (b"h", b"subject"), (b"bh", body), (b"b", b"0" * 60),
    ]  # fmt: skip
    private = dkim.crypto.parse_pem_private_key(pem)
    return b"DKIM-Signature: " + signer.gen_header(
        fields, (b"subject",), canon, b"DKIM-Signature", private
    )


@pytest.mark.parametrize(
    "server",
    [
        "mx.home.test.evil.test",
        "evil-mx.home.test",
        "mx.home.tes",
        "mx.home.test.",
        "x mx.home.test",
    ],
)
def test_a_verdict_of_a_server_whose_name_only_looks_like_the_trusted_one_is_not_its(server):
    message = parse(mail(Authentication_Results=f"{server}; dmarc=pass header.from=home.test"))
    assert trusted_verdict(message, "mx.home.test", "home.test") is None


def test_a_folded_verdict_of_the_trusted_server_in_any_case_is_read():
    raw = (
        b"Authentication-Results: MX.HOME.TEST;\r\n\tdkim=pass\r\n  header.d=Home.Test;\r\n"
        b"\tdmarc=pass header.from=home.test\r\n" + mail()
    )
    assert prove(raw, "mx.home.test", dns()).proven


def test_a_trusted_pass_for_another_from_domain_or_a_lower_pass_proves_nothing():
    other = parse(mail(Authentication_Results="mx.home.test; dmarc=pass header.from=evil.test"))
    assert trusted_verdict(other, "mx.home.test", "home.test") is None
    # The server's own header on top says nothing of DMARC; the forger's pass lies below.
    stacked = (
        b"Authentication-Results: mx.home.test; spf=none\r\n"
        b"Authentication-Results: mx.home.test; dmarc=pass header.from=home.test\r\n" + mail()
    )
    assert not prove(stacked, "mx.home.test", dns()).proven


def test_a_verdict_inside_a_forwarded_message_is_not_the_servers(home):
    inner = b"Authentication-Results: mx.home.test; dmarc=pass header.from=home.test\r\n" + mail()
    outer = EmailMessage()
    outer["From"] = f"Alice <{ALICE}>"
    outer["Subject"] = "Fwd"
    outer.set_content("see attached")
    outer.add_attachment(parse(inner), disposition="inline")
    assert not prove(bytes(outer), "mx.home.test", dns()).proven


def test_a_mail_with_no_message_id_is_a_thread_of_its_own(home):
    raw = home.sign(mail().replace(b"Message-ID: <1@home.test>\n", b""))
    found = inbound_of(raw, 7, "9", "butler@home.test", None)
    assert found is not None and found.sender == ALICE and found.thread == "<9.7@butler>"


def test_a_lookalike_from_domain_signed_by_its_owner_is_another_address():
    """``alice@hοme.test`` (a Greek omicron) is never Alice's, even signed by whoever holds
    that domain (written in raw UTF-8 it is not even proven: the parser keeps its bytes
    undecoded, and they make no domain)."""
    lookalike = "hοme.test".encode("idna").decode()
    key = DkimKey(lookalike)
    raw = key.sign(mail(sender="Alice <alice@hοme.test>"))
    assert sender_of(parse(raw)) != ALICE and not passes_for_alice(raw, dns(key))


def test_a_sender_or_reply_to_line_naming_alice_changes_nothing(home):
    raw = home.sign(mail(sender="Mallory <mallory@home.test>", Sender=ALICE, Reply_To=ALICE))
    found = inbound_of(raw, 1, "1", "butler@home.test", None)
    assert found is not None and found.sender == found.chat == "mallory@home.test"


def test_a_signed_mail_dated_over_a_week_ago_is_not_proven(home):
    now = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
    old = home.sign(mail(Date=email.utils.format_datetime(now - timedelta(days=30))))
    fresh = home.sign(mail(Date=email.utils.format_datetime(now - timedelta(hours=1))))
    refused = prove(old, None, dns(home), now=now)
    assert not refused.proven and "dated 2026-10-30" in refused.reason
    assert prove(fresh, None, dns(home), now=now).proven


def resent(raw: bytes) -> bytes:
    """``raw`` as Mallory sends it again: through her own server, whose trace is on top."""
    return b"Received: from mallory.evil.test by mx.home.test; Sun, 29 Nov 2026\r\n" + raw


async def test_a_genuine_signed_mail_sent_again_by_someone_else_starts_no_second_session(home):
    """The signature still verifies on the copy; the inbox knows it from the first."""
    signed = home.sign(mail(body="pay the plumber 300"))
    desk = Desk(channel=Mail())
    desk.senders.pair("email", ALICE)
    rows = []
    for uid, raw in ((1, signed), (2, resent(signed))):
        proof = prove(raw, None, dns(home))
        assert proof.proven  # DKIM alone cannot tell the copy
        found = inbound_of(raw, uid, "1", "butler@home.test", None, proof.signature)
        assert found is not None
        rows.append(await desk.send(found.text, found))
    assert [r["status"] for r in rows] == ["answered", "refused"]
    assert "same mail sent again" in rows[1]["payload"]["refused"]
    assert len(desk.butlers["tester"].requests) == 1
    other = home.sign(mail(body="and the electrician 200"))
    proof = prove(other, None, dns(home))
    found = inbound_of(other, 3, "1", "butler@home.test", None, proof.signature)
    assert found is not None and (await desk.send(found.text, found))["status"] == "answered"
