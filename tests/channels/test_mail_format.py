"""What an email becomes: its sender, thread and words; which mail is never answered; the reply."""

from __future__ import annotations

from email.message import EmailMessage

from butler.channels.mail_format import inbound_of, reply_of

OWN = "butler@home.test"


def raw(body: str = "what is due today?", **headers: str) -> bytes:
    message = EmailMessage()
    message["From"] = headers.pop("From", "Alice <Alice@Home.test>")
    message["To"] = OWN
    message["Subject"] = headers.pop("Subject", "Meds")
    message["Message-ID"] = headers.pop("Message_ID", "<m2@home.test>")
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    message.set_content(body)
    return bytes(message)


def test_a_reply_in_a_thread_is_the_thread_of_its_first_message_and_loses_its_quote():
    text = "and tomorrow?\n\nOn Thu, 26 Nov 2026, butler wrote:\n> [health] iron at 8\n"
    references = "<m1@home.test> <r1@home.test>"
    email = raw(text, In_Reply_To="<r1@home.test>", References=references)
    found = inbound_of(email, 7, "42", OWN, None)
    assert found is not None
    assert found.sender == found.chat == "alice@home.test"
    assert found.thread == "<m1@home.test>" and found.external_id == "42:7"
    assert found.text == "and tomorrow?"
    assert found.reply["references"] == ["<m1@home.test>", "<r1@home.test>"]


def test_robots_lists_and_the_butler_itself_are_never_answered():
    assert inbound_of(raw(Auto_Submitted="auto-replied"), 1, "1", OWN, None) is None
    assert inbound_of(raw(Precedence="bulk"), 1, "1", OWN, None) is None
    assert inbound_of(raw(List_Id="<news.example.org>"), 1, "1", OWN, None) is None
    assert inbound_of(raw(From=OWN), 1, "1", OWN, None) is None
    assert inbound_of(raw(From="a@x.test, b@y.test"), 1, "1", OWN, None) is None


def test_an_unproven_sender_keeps_its_address_and_carries_why_it_is_unproven():
    found = inbound_of(raw(), 1, "1", OWN, "it carries no DKIM signature (From home.test)")
    assert found is not None and found.sender == found.chat == "alice@home.test"
    assert found.unproven == "it carries no DKIM signature (From home.test)"
    assert found.payload()["unproven"] == found.unproven  # kept for a restart


def test_a_message_with_two_from_lines_has_no_sender():
    twice = raw().replace(b"From: Alice", b"From: Mallory <m@evil.test>\nFrom: Alice", 1)
    assert inbound_of(twice, 1, "1", OWN, None) is None


def test_the_reply_goes_to_the_from_address_in_the_same_thread_never_to_reply_to():
    message = inbound_of(
        raw(Reply_To="attacker@evil.example", References="<m1@home.test>"), 3, "9", OWN, None
    )
    assert message is not None
    reply = reply_of(message, "[health] iron at 8", OWN)
    assert reply["To"] == "alice@home.test" and reply["From"] == OWN
    assert reply["Subject"] == "Re: Meds" and reply["In-Reply-To"] == "<m2@home.test>"
    assert reply["References"] == "<m1@home.test> <m2@home.test>"
    assert reply["Auto-Submitted"] == "auto-replied"
    assert reply_of(message, "[health] iron at 8", OWN)["Message-ID"] == reply["Message-ID"]
