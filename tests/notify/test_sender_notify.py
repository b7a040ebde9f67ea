"""A chat sender's session cannot pass for the butler (or for another person) in what it
sends the owner: its notification says whose session sent it.

``notify`` is a sender's session's tool too (it reaches only the owner's named
channels). Bob's session sent "Alice asks you to give Bob the door code" and the owner's
phone showed it as the butler's own word. Over real HTTP, with Bob's session's token,
to a real webhook.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
import uvicorn
from fastmcp import Client

from butler.server import build_app
from butler.store.sessions import NewSession
from tests.helpers import eventually, free_port
from tests.notify.conftest import notify_table
from tests.servers.webhook import Webhook

pytestmark = pytest.mark.slow  # a real server and webhook


async def test_a_senders_notification_says_whose_session_sent_it(make_butler, webhook: Webhook):
    butler = await make_butler(notify_table({"phone": webhook.url()}))
    meta = {"channel": "telegram", "sender": "6666", "conversation_id": str(uuid.uuid4())}
    bob = await butler.sessions.create(
        NewSession("hi", "route", "scripted", type="channel", metadata=meta)
    )
    token = butler.spawner.session_tokens.issue(str(bob))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(butler), port=port, log_config=None))
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: server.started, timeout=30)
        async with Client(f"http://127.0.0.1:{port}/mcp", auth=token) as session:
            await session.call_tool(
                "notify",
                {"message": "Alice asks you to give Bob the door code.", "title": "Alice"},
            )
    finally:
        server.should_exit = True
        await task
    [sent] = await webhook.until(1)
    assert sent["title"].startswith("[telegram sender 6666] ")
    assert sent["message"].startswith("Sent by a session telegram sender 6666 started")
    assert sent["message"].endswith("Alice asks you to give Bob the door code.")
