"""A roster's channels in the test's own event loop, over real PostgreSQL and real sessions.

Each butler is a real :class:`Spawner` running the ``command`` runtime with
``tests/channels/agent.py``; the channel services are the daemon's own,
assembled as ``butler up`` assembles them. Only the chat server is a
stand-in (the fake Telegram Bot API), or a real one (Synapse, dovecot).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from butler.channels.assembly import Host, build_services
from butler.channels.pairing import issue
from butler.channels.service import ChannelService
from butler.config import ButlerConfig, load_config
from butler.config.switchboard import load_switchboard
from butler.spawner.spawner import Spawner
from butler.store.channel_senders import SenderStore
from butler.store.conversations import ConversationStore
from butler.store.credentials import CredentialStore
from butler.store.db import Database, quote_ident
from tests.conftest import TEST_DSN
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.fakes.telegram_api import TOKEN, FakeTelegram
from tests.helpers import eventually, free_port, spawner_over, wait_until, write_butler

AGENT = Path(__file__).with_name("agent.py")
DESCRIPTIONS = {
    "health": "Medications, doses, appointments and what is due today.",
    "general": "Shopping lists, errands and everything else.",
}


def agent_runtime(name: str) -> dict[str, Any]:
    argv = [sys.executable, str(AGENT), name, "{prompt_file}", "{mcp_config}"]
    return {"type": "command", "command": argv}


def write_roster(
    roster: Path, schema: str | dict[str, str], extra: dict[str, str] | None = None
) -> dict[str, Path]:
    """health and general, each with the stand-in agent and a description; their folders.

    ``schema`` is one for both, or each butler's own by name.
    """
    folders = {}
    for name, description in DESCRIPTIONS.items():
        folder = write_butler(
            roster,
            name,
            port=free_port(),
            schema=schema if isinstance(schema, str) else schema[name],
            runtime=agent_runtime(name),
            extra=(extra or {}).get(name, ""),
        )
        toml = folder / "butler.toml"
        head = f'[butler]\ndescription = "{description}"\n'
        toml.write_text(toml.read_text().replace("[butler]\n", head, 1))
        folders[name] = folder
    return folders


def switchboard_toml(roster: Path, telegram: FakeTelegram, tables: str = "") -> None:
    """The roster's switchboard: home general, the fake Telegram bot, and ``tables``."""
    (roster / "switchboard.toml").write_text(
        f'[switchboard]\nhome = "general"\n\n[switchboard.channels.telegram]\n'
        f'api_url = "{telegram.api_url}"\npoll_timeout_s = 2\n\n{tables}',
        encoding="utf-8",
    )


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as server:
        yield server


@pytest.fixture
def discord() -> Iterator[FakeDiscord]:
    with FakeDiscord(heartbeat_ms=1000) as server:
        yield server


@dataclass
class Roster:
    """The running channels of a test roster, and what a test reads them through."""

    db: Database
    spawners: dict[str, Spawner]
    services: dict[str, ChannelService]

    @property
    def senders(self) -> SenderStore:
        return SenderStore(self.db)

    @property
    def conversations(self) -> ConversationStore:
        return ConversationStore(self.db)

    async def pair(self, kind: str) -> str:
        code, _ = await issue(self.senders, kind)
        return code

    async def sessions(self) -> list[dict[str, Any]]:
        rows = await self.db.fetch("SELECT * FROM sessions ORDER BY created_at")
        return [dict(row) for row in rows]

    def state(self, kind: str) -> dict[str, Any]:
        for service in self.services.values():
            for state in service.states():
                if state["channel"] == kind:
                    return state
        raise KeyError(kind)


def configs_of(roster: Path) -> list[ButlerConfig]:
    """Every butler of the roster folder, loaded."""
    folders = sorted(f for f in roster.iterdir() if (f / "butler.toml").is_file())
    return [load_config(folder) for folder in folders]


@pytest.fixture
async def start_roster(db: Database, roster: Path) -> AsyncIterator[Callable[..., Any]]:
    """Start the channels of the roster the test wrote, as ``butler up`` would; stopped after."""
    running: list[ChannelService] = []

    async def start(environ: dict[str, str] | None = None) -> Roster:
        configs = configs_of(roster)
        credentials = CredentialStore(db, {"TELEGRAM_BOT_TOKEN": TOKEN, **(environ or {})})
        spawners = {}
        for config in configs:
            spawners[config.name] = spawner_over(config, db, credentials=credentials)
        switchboard = load_switchboard(roster, [c.name for c in configs])
        hosts = [Host(c, db, spawners[c.name]) for c in configs]
        services = build_services(hosts, switchboard)
        for service in services.values():
            service.start()
            running.append(service)
        return Roster(db, spawners, services)

    yield start
    for service in running:
        await service.stop(5)


@pytest.fixture
async def serve_tools() -> AsyncIterator[Callable[[Roster], Any]]:
    """Serve each butler's MCP tools at its port, as its daemon would, over the running
    roster's spawners and channels: a session's runtime calls its butler there."""
    import uvicorn

    from butler.adapters.uvicorn import Server
    from butler.context import ButlerContext
    from butler.server import build_app
    from butler.store.sessions import SessionStore
    from butler.store.state import StateStore

    servers: list[tuple[Server, asyncio.Task[None]]] = []

    async def serve(running: Roster) -> dict[str, ButlerContext]:
        contexts: dict[str, ButlerContext] = {}
        for name, spawner in running.spawners.items():
            db = running.db
            contexts[name] = ButlerContext(
                spawner.config, db, StateStore(db), SessionStore(db), spawner
            )
            contexts[name].channels = running.services.get(name)
        for context in contexts.values():
            context.peers = list(contexts.values())
            port = context.config.butler.port
            config = uvicorn.Config(build_app(context), port=port, log_config=None)
            # The daemon's server, which installs no signal handlers: stock uvicorn
            # servers started side by side restore each other's handlers out of order
            # and leave a stopped one's as SIGTERM's, which sse-starlette then reads as
            # "shutting down" for every later event stream in this test process.
            server = Server(config)
            servers.append((server, asyncio.create_task(server.serve())))
            await eventually(lambda s=server: s.started, timeout=30)
        return contexts

    yield serve
    for server, task in servers:
        server.should_exit = True
        await task


async def replies(telegram: FakeTelegram, chat: int, count: int) -> list[str]:
    """The bot's first ``count`` messages to ``chat``, once there are that many."""
    await eventually(lambda: len(telegram.texts(chat)) >= count, timeout=60)
    return telegram.texts(chat)[:count]


@pytest.fixture
def schemas() -> Iterator[dict[str, str]]:
    """A schema of its own for health and for general, dropped after the test."""
    names = {name: f"t_{uuid.uuid4().hex[:8]}_{name}" for name in ("health", "general")}
    yield names

    async def drop() -> None:
        conn = await asyncpg.connect(TEST_DSN)
        try:
            for name in names.values():
                await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(name)} CASCADE")
        finally:
            await conn.close()

    asyncio.run(drop())


async def rows(schema: str, query: str) -> list[dict[str, Any]]:
    """What ``query`` finds in ``schema``, JSON columns decoded."""
    conn = await asyncpg.connect(TEST_DSN, server_settings={"search_path": schema})
    try:
        await conn.set_type_codec(
            "jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog"
        )
        return [dict(r) for r in await conn.fetch(query)]
    finally:
        await conn.close()


def reply_count(telegram: FakeTelegram, chat: int, count: int) -> list[str]:
    """Every message the bot sent to ``chat``, once there are ``count`` (for sync tests)."""
    wait_until(lambda: len(telegram.texts(chat)) >= count, timeout=90)
    return telegram.texts(chat)
