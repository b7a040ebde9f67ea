"""Which person a chain serves and what it sees: the scoping rules, without a database."""

from __future__ import annotations

import uuid

from butler.store.tenants import scoped, sender_key

ROOT = uuid.UUID(int=7)
META = {"channel": "telegram", "sender": "1001", "conversation_id": "c-1", "chat": "1001"}


def test_by_default_a_sender_sees_their_conversation():
    tenant = scoped(ROOT, META, "conversation")
    assert tenant.match == {"conversation_id": "c-1"}
    assert tenant.state_prefix == "tenant/conversation-c-1/"


def test_widened_to_the_sender_it_sees_all_of_that_persons_conversations():
    tenant = scoped(ROOT, META, "sender")
    other = scoped(ROOT, {**META, "sender": "1002"}, "sender")
    assert tenant.match == {"channel": "telegram", "sender": "1001"}
    assert tenant.key.startswith("sender-") and tenant.key != other.key


def test_a_chat_session_without_a_conversation_sees_only_its_own_chain():
    tenant = scoped(ROOT, {"channel": "telegram", "sender": "1001"}, "conversation")
    assert tenant.match is None and tenant.key == f"chain-{ROOT}"
    clause, args = tenant.where(3)
    assert clause == "COALESCE(sessions.root_id, sessions.id) = $3" and args == [ROOT]


def test_the_scope_is_a_chat_roots_metadata_never_a_childs():
    clause, args = scoped(ROOT, META, "conversation").where(1, "s")
    assert "r.trigger_source = 'route'" in clause and "r.metadata @> $2::jsonb" in clause
    assert args == [ROOT, {"conversation_id": "c-1"}]


def test_the_web_chats_sessions_are_the_owners_own_whatever_their_scope():
    """The web chat writes its sessions' channel and sender itself; the tenants module
    knows them by the same words."""
    from butler.channels.web_message import CHANNEL, OWNER
    from butler.store.tenants import WEB_OWNER, scoped

    web = {"channel": CHANNEL, "sender": OWNER, "conversation_id": "c1"}
    assert WEB_OWNER == (CHANNEL, OWNER)
    assert scoped(uuid.uuid4(), web, "conversation").owner
    assert scoped(uuid.uuid4(), web, "sender").owner
    bob = {"channel": "telegram", "sender": "owner", "conversation_id": "c2"}
    assert not scoped(uuid.uuid4(), bob, "conversation").owner


def test_a_chats_session_is_its_senders_whatever_the_scope_and_the_owners_are_none():
    assert sender_key("route", META) == scoped(ROOT, META, "sender").key
    assert sender_key("route", {**META, "conversation_id": "c-2"}) == sender_key("route", META)
    assert sender_key("route", {**META, "sender": "1002"}) != sender_key("route", META)
    for source in ("external", "trigger", "tick", "schedule:daily"):
        assert sender_key(source, META) is None  # the owner's, whatever its metadata says
    assert sender_key("route", {"channel": "web", "sender": "owner"}) is None  # web chat


def test_a_chats_session_without_a_sender_is_nobodys_never_the_owners():
    assert sender_key("route", {}) is not None
