"""Who gets in: the inbox's decisions on a message, before any butler sees it."""

from __future__ import annotations

from dataclasses import replace

from butler.channels.gate import NOT_PAIRED, Action, Overheard, admit, overheard
from butler.channels.message import Inbound
from butler.config.channels import EmailSettings, MatrixSettings, TelegramSettings

TELEGRAM = TelegramSettings(groups=[-1001])
PRIVATE = Inbound("telegram", "1:1", "1001", "", "1001", "Alice", "what is due today?")
IN_GROUP = replace(PRIVATE, chat="-1001", group=True, addressed=True)


def test_a_private_chat_is_always_heard():
    assert overheard(PRIVATE, TELEGRAM) is None


def test_a_group_is_heard_only_when_allowed_and_addressed():
    assert overheard(IN_GROUP, TELEGRAM) is None
    assert overheard(replace(IN_GROUP, addressed=False), TELEGRAM) is Overheard.NOT_ADDRESSED
    elsewhere = replace(IN_GROUP, chat="-1002")
    assert overheard(elsewhere, TELEGRAM) is Overheard.GROUP_NOT_ALLOWED


def test_no_group_is_allowed_unless_listed():
    assert overheard(IN_GROUP, TelegramSettings()) is Overheard.GROUP_NOT_ALLOWED
    matrix = MatrixSettings(homeserver="https://m.test", user_id="@b:m.test", groups=["!r:m.test"])
    assert matrix.allows_group("!r:m.test") and not matrix.allows_group("!other:m.test")


def test_a_paired_proven_sender_is_answered():
    assert admit(PRIVATE, paired=True, refuses_strangers=True).action is Action.ANSWER


def test_a_stranger_in_a_private_chat_hears_one_refusal_and_email_none():
    chat = admit(PRIVATE, paired=False, refuses_strangers=True)
    mail = admit(PRIVATE, paired=False, refuses_strangers=False)
    assert (chat.action, chat.notice) == (Action.STRANGER, NOT_PAIRED)
    assert (mail.action, mail.notice) == (Action.STRANGER, None)


def test_a_code_pairs_in_a_private_chat_only():
    code = admit(replace(PRIVATE, text="/start K7Q2M-9XHDA"), False, refuses_strangers=True)
    assert (code.action, code.code, code.notice) == (Action.PAIR, "K7Q2M-9XHDA", NOT_PAIRED)
    in_group = admit(replace(IN_GROUP, text="K7Q2M-9XHDA"), paired=False, refuses_strangers=True)
    assert (in_group.action, in_group.code, in_group.notice) == (Action.STRANGER, None, None)


def test_a_bystander_in_a_group_is_told_nothing():
    entry = admit(IN_GROUP, paired=False, refuses_strangers=True)
    assert (entry.action, entry.notice) == (Action.STRANGER, None)


def test_an_unproven_sender_is_refused_even_as_a_paired_address_which_alone_is_told():
    forged = replace(PRIVATE, channel="email", unproven="it carries no DKIM signature")
    told = admit(forged, paired=True, refuses_strangers=False)
    silent = admit(forged, paired=False, refuses_strangers=False)
    assert told.action is Action.UNPROVEN and "it carries no DKIM signature" in told.notice
    assert (silent.action, silent.notice) == (Action.UNPROVEN, None)


def test_an_unproven_message_carrying_a_code_pairs_nobody():
    forged = replace(PRIVATE, text="K7Q2M-9XHDA", unproven="no signature")
    assert admit(forged, paired=False, refuses_strangers=False).action is Action.UNPROVEN


def test_email_shows_how_its_senders_are_proven():
    base = {"address": "b@home.test", "imap_host": "imap.test", "smtp_host": "smtp.test"}
    assert "DKIM" in EmailSettings(**base).proof()
    assert "mx.test" in EmailSettings(**base, verified_by="mx.test").proof()
    loose = EmailSettings(**base, accept_unauthenticated=True).proof()
    assert loose.startswith("UNAUTHENTICATED")
