"""The channel settings a person writes: resolver, groups, what a sender's session sees."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from butler.config.channel_tables import ChannelsConfig
from butler.config.channels import EmailSettings, MatrixSettings, resolver_address

MAIL = {"address": "butler@home.test", "imap_host": "imap.test", "smtp_host": "smtp.test"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1", ("127.0.0.1", 53)),
        ("127.0.0.53:5353", ("127.0.0.53", 5353)),
        ("[::1]:5353", ("::1", 5353)),
        ("::1", ("::1", 53)),
    ],
)
def test_a_resolver_is_an_address_with_an_optional_port(value, expected):
    assert resolver_address(value) == expected


@pytest.mark.parametrize("value", ["dns.example.org", "127.0.0.1:0", "127.0.0.1:http", ""])
def test_a_resolver_that_is_no_address_is_refused_in_one_line(value):
    with pytest.raises(ValidationError, match="expected a resolver's address like"):
        EmailSettings(**MAIL, resolver=value)


def test_email_is_proven_by_default_and_unauthenticated_only_when_said():
    assert EmailSettings(**MAIL).accept_unauthenticated is False
    assert EmailSettings(**MAIL, accept_unauthenticated=True).accept_unauthenticated


def test_matrix_groups_are_room_ids_old_and_new():
    base = {"homeserver": "https://m.test", "user_id": "@b:m.test"}
    ok = MatrixSettings(**base, groups=["!abc:m.test", "!hAsH_of-12-version+room"])
    assert ok.allows_group("!abc:m.test")
    with pytest.raises(ValidationError, match="expected Matrix room ids"):
        MatrixSettings(**base, groups=["#family:m.test"])


def test_a_senders_session_sees_its_conversation_unless_the_owner_widens_it():
    assert ChannelsConfig().sender_scope == "conversation"
    assert ChannelsConfig(sender_scope="butler").sender_scope == "butler"
    with pytest.raises(ValidationError):
        ChannelsConfig(sender_scope="everyone")
