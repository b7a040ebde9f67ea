"""A person's side of each chat service in the channel tests: the switchboard that
points the roster at the service's fake, pairing, and waiting for the bot's answers.

One module for the tests of several channels (tests/channels/test_groups.py runs
Telegram, Discord, Slack and Matrix side by side), so no test file imports another's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.channels.conftest import replies, write_roster
from tests.fakes.discord_api import ALICE as DISCORD_ALICE
from tests.fakes.discord_api import GENERAL as DISCORD_GENERAL
from tests.fakes.discord_api import TOKEN as DISCORD_TOKEN
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_api import Person as DiscordPerson
from tests.fakes.slack_api import ALICE as SLACK_ALICE
from tests.fakes.slack_api import APP_TOKEN, BOT_TOKEN, FakeSlack
from tests.fakes.slack_api import GENERAL as SLACK_GENERAL
from tests.fakes.slack_api import Person as SlackPerson
from tests.fakes.telegram_api import ALICE as TELEGRAM_ALICE
from tests.fakes.telegram_api import Person as TelegramPerson
from tests.helpers import eventually
from tests.servers.synapse import MatrixUser, Synapse

# --- Telegram ----------------------------------------------------------------------


async def telegram_paired(
    roster: Any, telegram: Any, person: TelegramPerson = TELEGRAM_ALICE
) -> None:
    """``person`` sends a fresh pairing code and is greeted."""
    before = len(telegram.texts(person.id))
    telegram.send(await roster.pair("telegram"), user=person)
    await replies(telegram, person.id, before + 1)
    assert telegram.texts(person.id)[before].startswith("Paired")


async def telegram_answer_to(
    telegram: Any, text: str | None, person: TelegramPerson = TELEGRAM_ALICE, **extra: Any
) -> str:
    """What the bot answers ``person``'s next message (with ``extra`` fields, e.g. a document)."""
    before = len(telegram.texts(person.id))
    telegram.send(text, user=person, **extra)
    return (await replies(telegram, person.id, before + 1))[before]


# --- Discord -----------------------------------------------------------------------


def discord_switchboard(roster: Path, discord: FakeDiscord) -> None:
    (roster / "switchboard.toml").write_text(
        f'[switchboard]\nhome = "general"\n\n[switchboard.channels.discord]\n{discord.settings()}'
        f'groups = ["{DISCORD_GENERAL}"]\n',
        encoding="utf-8",
    )


async def discord_said(discord: FakeDiscord, channel: str, count: int) -> list[str]:
    """The bot's first ``count`` messages in ``channel``, once there are that many."""
    await discord.until(lambda: len(discord.texts(channel)) >= count, timeout=60)
    return discord.texts(channel)[:count]


async def discord_started(
    roster, schema_name, discord, start_roster, person: DiscordPerson = DISCORD_ALICE
):
    """The roster running with its Discord bot connected, ``person`` paired with it."""
    write_roster(roster, schema_name)
    discord_switchboard(roster, discord)
    running = await start_roster({"DISCORD_BOT_TOKEN": DISCORD_TOKEN})
    await eventually(lambda: running.state("discord")["status"] == "connected")
    discord.say(await running.pair("discord"), user=person)
    assert (await discord_said(discord, person.dm, 1))[0].startswith("Paired, Alice.")
    return running


# --- Slack -------------------------------------------------------------------------

SLACK_TOKENS = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN}


def slack_switchboard(roster: Path, slack: FakeSlack) -> None:
    (roster / "switchboard.toml").write_text(
        f'[switchboard]\nhome = "general"\n\n[switchboard.channels.slack]\n{slack.settings()}'
        f'groups = ["{SLACK_GENERAL}"]\n',
        encoding="utf-8",
    )


async def slack_said(slack: FakeSlack, channel: str, count: int) -> list[str]:
    """The app's first ``count`` messages in ``channel``, once there are that many."""
    await slack.until(lambda: len(slack.texts(channel)) >= count, timeout=60)
    return slack.texts(channel)[:count]


async def slack_paired(running, slack: FakeSlack, person: SlackPerson = SLACK_ALICE) -> None:
    slack.say(await running.pair("slack"), user=person)
    assert (await slack_said(slack, person.dm, 1))[0].startswith(f"Paired, {person.display_name}.")


async def slack_started(roster, schema_name, slack, start_roster):
    """The roster running with its Slack app connected, Alice paired with it."""
    write_roster(roster, schema_name)
    slack_switchboard(roster, slack)
    running = await start_roster(SLACK_TOKENS)
    await slack_paired(running, slack)
    return running


# --- Matrix ------------------------------------------------------------------------


def matrix_switchboard(roster: Path, synapse: Synapse, bot: MatrixUser, extra: str = "") -> None:
    (roster / "switchboard.toml").write_text(
        '[switchboard]\nhome = "general"\n\n[switchboard.channels.matrix]\n'
        f'homeserver = "{synapse.url}"\nuser_id = "{bot.user_id}"\n{extra}',
        encoding="utf-8",
    )


def notices(synapse: Synapse, person: MatrixUser, room: str, bot: MatrixUser) -> list[dict]:
    return [m for m in synapse.messages(person, room) if m["sender"] == bot.user_id]


async def bot_says(
    synapse: Synapse, person: MatrixUser, room: str, bot: MatrixUser, n: int
) -> list:
    """The bot's first ``n`` messages in ``room``, once there are that many."""
    await eventually(lambda: len(notices(synapse, person, room, bot)) >= n, timeout=60)
    return notices(synapse, person, room, bot)[:n]


async def has_joined(synapse: Synapse, person: MatrixUser, room: str, bot: MatrixUser) -> bool:
    path = f"/_matrix/client/v3/rooms/{room}/joined_members"
    found = await asyncio.to_thread(synapse.call, "GET", path, None, person.token)
    return bot.user_id in found["joined"]
