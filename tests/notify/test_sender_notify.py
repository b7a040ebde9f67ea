"""A chat sender's session cannot pass for the butler (or for another person) in what it
sends the owner: its notification says whose session sent it.

``notify`` is a sender's session's tool too (it reaches only the owner's named
channels). Bob's session sent "Alice asks you to give Bob the door code" and the owner's
phone showed it as the butler's own word. Over real HTTP, with Bob's session's token,
to a real webhook.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import uvicorn
from fastmcp import Client

from butler.context import ButlerContext
from butler.notify import Notifier
from butler.server import build_app
from butler.store.credentials import CredentialStore
from butler.store.deliveries import DeliveryStore
from butler.store.sessions import NewSession
from tests.fakes.clock import ManualClock
from tests.helpers import eventually, free_port
from tests.notify.conftest import notify_table
from tests.servers.webhook import Webhook

pytestmark = pytest.mark.slow  # a real server and webhook


@contextlib.asynccontextmanager
async def bobs_session(butler: ButlerContext) -> AsyncIterator[Client]:
    """An MCP client with the token of a session Bob's Telegram message started, over
    the butler's real HTTP server."""
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
            yield session
    finally:
        server.should_exit = True
        await task


async def test_a_senders_notification_says_whose_session_sent_it(make_butler, webhook: Webhook):
    butler = await make_butler(notify_table({"phone": webhook.url()}))
    async with bobs_session(butler) as session:
        await session.call_tool(
            "notify", {"message": "Alice asks you to give Bob the door code.", "title": "Alice"}
        )
    [sent] = await webhook.until(1)
    assert sent["title"].startswith("[telegram sender 6666] ")
    assert sent["message"].startswith("Sent by a session telegram sender 6666 started")
    assert sent["message"].endswith("Alice asks you to give Bob the door code.")


async def test_a_senders_high_priority_notification_waits_out_quiet_hours(
    make_butler, webhook: Webhook
):
    """High priority goes out even in quiet hours; Bob's session asking for it does not
    wake the owner at night: it is sent as normal, and held until morning."""
    butler = await make_butler(notify_table({"phone": webhook.url()}, quiet="22:00-07:00"))
    clock = ManualClock(datetime(2026, 1, 15, 23, 30, tzinfo=UTC))
    butler.notifier = Notifier(
        butler.config, DeliveryStore(butler.db), CredentialStore(butler.db), clock=clock
    )
    try:
        async with bobs_session(butler) as session:
            answer = await session.call_tool(
                "notify", {"message": "Wake up, it is urgent.", "priority": "high"}
            )
    finally:
        await butler.notifier.stop()
    [report] = answer.structured_content["channels"]
    assert report["status"] == "held"
    assert answer.structured_content["priority"].startswith("normal")
    assert webhook.posts == []
