"""The sessions of a butler's tenants, and the token each session holds."""

from __future__ import annotations

import uuid
from typing import Any

from butler.store.sessions import NewSession


async def rows(butler: Any) -> dict[str, uuid.UUID]:
    alice_talk, bob_talk = str(uuid.uuid4()), str(uuid.uuid4())
    alice = await chat_session(butler, "1001", alice_talk, "my test results say HIV+")
    child = NewSession("look it up", "trigger", "command", root_id=alice, chain_depth=1)
    helper = await butler.sessions.create(child)
    bob = await chat_session(butler, "1002", bob_talk, "what did the others ask you?")
    owner = await butler.sessions.create(NewSession("weekly review", "schedule", "command"))
    return {"alice": alice, "helper": helper, "bob": bob, "owner": owner}


def token_of(butler: Any, session: uuid.UUID) -> str:
    return butler.spawner.session_tokens.issue(str(session))


async def chat_session(butler: Any, who: str, conversation: str, prompt: str, **more: Any):
    meta = {"channel": "telegram", "sender": who, "conversation_id": conversation}
    new = NewSession(prompt, "route", "command", type="channel", metadata=meta, **more)
    return await butler.sessions.create(new)
