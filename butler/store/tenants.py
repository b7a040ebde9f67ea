"""Whose conversation a session serves, read from the session rows themselves.

A session started by a chat message (trigger source ``route``) carries the
channel, the sender and the conversation in its metadata, written by the
inbox; every session a session starts records its chain's root
(``root_id``). So the tenant of any session is its root's: a root started
for a chat makes the whole chain that person's; a root the owner started (a
call, a schedule, the dashboard) makes it the owner's, with no tenant. A
session of a tenant sees the sessions whose root matches it, memory of
those only, and state under its own prefix.

Nothing a runtime sends chooses the tenant: its token names its session
(``security/session_tokens.py``), and the rows say the rest. A row that
cannot be found makes a tenant of nobody (its own chain only), never the
owner.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from butler.store.db import Database

#: The trigger source of sessions started for a chat message (the inbox's and router's).
CHAT = "route"
#: What a sender's session sees: its conversation's, its sender's, or the whole butler's.
SCOPES = ("conversation", "sender", "butler")
#: The channel and sender of the web chat's sessions (``channels/web_message.py``): the
#: owner, logged in at the dashboard. Scoped to their conversation like any chat's, but
#: the owner's own: they write the butler folder as the owner's sessions do.
WEB_OWNER = ("web", "owner")


@dataclass(frozen=True)
class Tenant:
    """The person a chain of sessions serves, and how much of their history it sees."""

    #: The root of the asking session's chain: always within its own scope.
    root: uuid.UUID
    #: What the metadata of a chat's root session holds for that session's chain to be
    #: in scope (None: only this chain).
    match: dict[str, str] | None
    #: Names the tenant's share of the butler's state (``tenant/<key>/...``).
    key: str
    #: The chain is the owner's own conversation (the web chat's), not another person's.
    owner: bool = False

    @property
    def state_prefix(self) -> str:
        return f"tenant/{self.key}/"

    def where(self, first: int, alias: str = "sessions") -> tuple[str, list[Any]]:
        """A SQL condition on ``alias`` (a sessions row) for rows in scope, with its
        arguments numbered from ``$first``."""
        chain = f"COALESCE({alias}.root_id, {alias}.id)"
        if self.match is None:
            return f"{chain} = ${first}", [self.root]
        roots = (
            f"SELECT r.id FROM sessions r WHERE r.trigger_source = '{CHAT}'"
            f" AND r.metadata @> ${first + 1}::jsonb"
        )
        return f"({chain} = ${first} OR {chain} IN ({roots}))", [self.root, self.match]


async def tenant_of(db: Database, session_id: str | uuid.UUID, scope: str) -> Tenant | None:
    """The tenant of ``session_id`` under the butler's ``scope``; None for the owner's."""
    try:
        key = uuid.UUID(str(session_id))
    except ValueError:
        return nobody(uuid.UUID(int=0))
    row = await db.fetchrow(
        "SELECT COALESCE(s.root_id, s.id) AS root, r.id AS found, r.trigger_source,"
        " r.metadata FROM sessions s LEFT JOIN sessions r ON r.id = COALESCE(s.root_id, s.id)"
        " WHERE s.id = $1",
        key,
    )
    if row is None:
        return nobody(key)
    if row["found"] is None:
        return nobody(row["root"])
    if row["trigger_source"] != CHAT or scope == "butler":
        return None
    return scoped(row["root"], _metadata(row["metadata"]), scope)


def scoped(root: uuid.UUID, metadata: dict[str, Any], scope: str) -> Tenant:
    """The tenant of a chain whose root a chat started, with ``metadata``, under ``scope``."""
    channel, sender = str(metadata.get("channel", "")), str(metadata.get("sender", ""))
    owner = (channel, sender) == WEB_OWNER
    if scope == "sender" and channel and sender:
        match = {"channel": channel, "sender": sender}
        return Tenant(root, match, _person(channel, sender), owner)
    conversation = metadata.get("conversation_id")
    if conversation:
        match = {"conversation_id": str(conversation)}
        return Tenant(root, match, f"conversation-{conversation}", owner)
    return nobody(root)


def sender_key(source: str, metadata: Mapping[str, Any]) -> str | None:
    """Whose a root session is, from what started it: None for the owner's (their calls,
    schedules, the dashboard, their web chat), else the key of the chat's sender
    (``sender-<digest>`` of the channel and sender, whatever the butler's scope): the
    person who steers it. A chat's session without a sender is nobody's, never the
    owner's."""
    if source != CHAT:
        return None
    channel, sender = str(metadata.get("channel", "")), str(metadata.get("sender", ""))
    if (channel, sender) == WEB_OWNER:
        return None
    return _person(channel, sender)


def steered_by(root: str) -> str:
    """:func:`sender_key`'s rule in SQL: for ``root``, a chain's root row (LEFT JOINed, so
    NULL when it is gone), who steers the chain (``telegram sender 6666``, or ``an unknown
    session`` for a root that cannot be found), NULL when it is the owner's."""
    channel, sender = WEB_OWNER
    owner = f'{{"channel": "{channel}", "sender": "{sender}"}}'
    return (
        f"CASE WHEN {root}.id IS NULL THEN 'an unknown session'"
        f" WHEN {root}.trigger_source = '{CHAT}' AND NOT {root}.metadata @> '{owner}'::jsonb"
        f" THEN concat({root}.metadata->>'channel', ' sender ', {root}.metadata->>'sender') END"
    )


def _person(channel: str, sender: str) -> str:
    digest = hashlib.sha256(f"{channel}\0{sender}".encode()).hexdigest()[:24]
    return f"sender-{digest}"


async def sender_key_of_root(db: Database, root: uuid.UUID) -> str | None:
    """:func:`sender_key` of the chain whose root is ``root``, read from its row; a root
    that cannot be found is nobody's (``chain-<root>``), never the owner's."""
    row = await db.fetchrow("SELECT trigger_source, metadata FROM sessions WHERE id = $1", root)
    if row is None:
        return f"chain-{root}"
    return sender_key(row["trigger_source"], _metadata(row["metadata"]))


def nobody(root: uuid.UUID) -> Tenant:
    """A tenant that sees its own chain and nothing else."""
    return Tenant(root, None, f"chain-{root}")


async def in_scope(db: Database, tenant: Tenant, session_id: str) -> bool:
    """Whether the session ``session_id`` is within ``tenant``'s scope."""
    try:
        key = uuid.UUID(str(session_id))
    except ValueError:
        return False
    clause, args = tenant.where(2)
    found = await db.fetchval(f"SELECT 1 FROM sessions WHERE id = $1 AND {clause}", key, *args)
    return found is not None


def _metadata(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
