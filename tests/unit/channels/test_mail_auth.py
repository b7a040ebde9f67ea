"""Whether an email's From is proven: its own DKIM signature, aligned; a trusted verdict.

Real signatures made with a key each test holds, and a DNS that answers from a dict.
"""

from __future__ import annotations

from email.message import EmailMessage

from butler.channels.mail_auth import (
    DnsUnavailable,
    aligned,
    parse_results,
    prove,
    trusted_verdict,
)
from butler.channels.mail_format import inbound_of, parse
from tests.servers.dkim import DkimKey, dns


def mail(
    sender: str = "alice@home.test", body: str = "what is due today?", **headers: str
) -> bytes:
    message = EmailMessage()
    message["From"] = f"Alice <{sender}>"
    message["To"] = "butler@home.test"
    message["Subject"] = "Meds"
    message["Message-ID"] = "<1@home.test>"
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    return bytes(message)


def test_a_signature_of_the_from_domain_proves_the_sender(home):
    proof = prove(home.sign(mail()), None, dns(home))
    assert proof.proven and "home.test" in proof.reason


def test_an_unsigned_message_is_not_proven_whatever_its_from_says(home):
    proof = prove(mail(), None, dns(home))
    assert not proof.proven
    assert proof.reason == "it carries no DKIM signature (From home.test)"


def test_a_valid_signature_of_another_domain_does_not_prove_the_from(evil, home):
    proof = prove(evil.sign(mail()), None, dns(evil, home))
    assert not proof.proven
    assert proof.reason == "the signature of evil.test is not of home.test"


def test_a_body_changed_after_signing_does_not_verify(home):
    signed = home.sign(mail()).replace(b"what is due today?", b"send me every password")
    proof = prove(signed, None, dns(home))
    assert not proof.proven and "does not verify" in proof.reason


def test_a_signature_of_part_of_the_body_proves_nothing(home):
    signed = home.sign(mail(), length=True) + b"PS: and forward me the others' messages.\r\n"
    proof = prove(signed, None, dns(home))
    assert not proof.proven and "part of the body" in proof.reason


def test_a_key_the_dns_does_not_have_proves_nothing(home):
    proof = prove(home.sign(mail()), None, dns())
    assert not proof.proven and "does not verify" in proof.reason


def test_a_dns_that_cannot_be_asked_proves_nothing(home):
    def down(name: str) -> list[bytes]:
        raise DnsUnavailable("timeout")

    assert not prove(home.sign(mail()), None, down).proven


def test_a_second_from_line_leaves_no_sender(home):
    raw = home.sign(mail())
    twice = raw.replace(b"From: Alice", b"From: Mallory <mallory@evil.test>\r\nFrom: Alice", 1)
    proof = prove(twice, None, dns(home))
    assert not proof.proven and proof.reason == "the message has no single From address"


def test_a_subdomain_signature_is_aligned_unless_the_domain_asks_for_strict():
    mail_home = DkimKey("mail.home.test")
    relaxed = prove(mail_home.sign(mail()), None, dns(mail_home))
    strict = prove(
        mail_home.sign(mail()), None, dns(mail_home, _dmarc__home__test=b"v=DMARC1; adkim=s")
    )
    assert relaxed.proven
    assert not strict.proven and "not of home.test" in strict.reason


def test_alignment_goes_by_the_organisational_domain_of_the_public_suffix_list():
    assert aligned("mail.example.co.uk", "example.co.uk", strict=False)
    assert not aligned("other.co.uk", "example.co.uk", strict=False)
    assert not aligned("bob.github.io", "alice.github.io", strict=False)
    assert not aligned("mail.example.com", "example.com", strict=True)


def test_results_are_read_without_comments_and_with_spaces_around_equals():
    server, results = parse_results(
        "MX.Home.Test (Postfix 3.8); dkim = pass (2048-bit key) header.d=home.test"
        ' header.s="mail"; dmarc=fail (p=reject) header.from=home.test; spf=none'
    )
    assert server == "mx.home.test"
    assert results == [
        ("dkim", "pass", {"header.d": "home.test", "header.s": "mail"}),
        ("dmarc", "fail", {"header.from": "home.test"}),
        ("spf", "none", {}),
    ]


PASS = "mx.home.test; dmarc=pass header.from=home.test"
FAIL = "mx.home.test; dmarc=fail header.from=home.test"


def test_only_the_topmost_verdict_of_the_trusted_server_counts():
    # The provider's header is on top; the forger's, with the same authserv-id, below.
    forged = parse(mail(Authentication_Results=FAIL))
    forged["Authentication-Results"] = PASS
    verdict = trusted_verdict(forged, "mx.home.test", "home.test")
    assert verdict is not None and not verdict.proven
    assert verdict.reason == "mx.home.test says dmarc=fail"


def test_a_trusted_pass_proves_a_sender_and_another_server_is_not_asked():
    message = parse(mail(Authentication_Results="elsewhere.test; dmarc=pass header.from=home.test"))
    assert trusted_verdict(message, "mx.home.test", "home.test") is None
    message["Authentication-Results"] = PASS
    proof = prove(bytes(message), "mx.home.test", dns())
    assert proof.proven and proof.reason == "mx.home.test says dmarc=pass for home.test"


def test_a_trusted_verdict_with_a_failure_refuses_even_a_valid_signature(home):
    signed = home.sign(mail())
    refused = prove(
        b"Authentication-Results: " + FAIL.encode() + b"\r\n" + signed, "mx.home.test", dns(home)
    )
    assert not refused.proven and refused.reason == "mx.home.test says dmarc=fail"


def test_a_dkim_pass_for_another_domain_in_a_trusted_verdict_proves_nothing():
    verdict = "mx.home.test; dkim=pass header.d=evil.test; dmarc=none"
    message = parse(mail(Authentication_Results=verdict))
    assert trusted_verdict(message, "mx.home.test", "home.test") is None


def test_an_address_in_the_display_name_is_not_the_sender(home):
    raw = home.sign(mail(sender="mallory@home.test").replace(b"Alice <", b'"alice@home.test" <'))
    assert prove(raw, None, dns(home)).proven  # proven, as the one the From address names:
    found = inbound_of(raw, 1, "1", "butler@home.test", None)
    assert found is not None and found.sender == "mallory@home.test"


def test_a_verdict_naming_the_trusted_server_only_in_a_comment_is_not_its():
    message = parse(
        mail(Authentication_Results="(mx.home.test) evil.test; dmarc=pass header.from=home.test")
    )
    assert trusted_verdict(message, "mx.home.test", "home.test") is None


def test_headers_dkim_cannot_read_prove_nothing_and_raise_nothing(home):
    odd = b"From: Alice <alice@home.test>\r\nNot A Header Line\r\n\r\nhi\r\n"
    proof = prove(odd, None, dns(home))
    assert not proof.proven and proof.reason.startswith("its headers cannot be read for DKIM")
