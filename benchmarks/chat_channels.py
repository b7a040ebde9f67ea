"""What the Slack and Discord clients add to a message, arriving and answered, against the fakes.

    .venv/bin/python benchmarks/chat_channels.py [--messages 200]

For each channel (slack-sdk over Socket Mode, hikari over the Gateway, as the
daemon drives them) a person's message is timed from the fake sending it to
``receive()`` returning it (the client's parsing, the channel's conversion,
for Slack the acknowledgement of the previous envelope), and a reply from
``send()`` to the fake's answer. No session runs: this is the channel's own
share of the 1-2 s a person waits. The fake Discord advertises a bucket of
five messages a second, as Discord does per channel, so hikari paces every
sixth reply to the next second.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from butler.channels.base import Channel
from butler.channels.discord import DiscordChannel
from butler.channels.slack import SlackChannel
from butler.config.channels import DiscordSettings, SlackSettings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import discord_api, slack_api


async def timed(channel: Channel, say: Callable[[str], object], count: int) -> dict[str, list]:
    """Milliseconds from ``say`` to ``receive()``, and of each ``send()``."""
    arrive, reply = [], []
    for n in range(count):
        start = time.perf_counter()
        say(f"message {n}")
        batch = await channel.receive()
        arrive.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        await channel.send(batch.messages[0], f"answer {n}")
        reply.append((time.perf_counter() - start) * 1000)
    return {"arrival": arrive, "reply": reply}


async def slack(count: int) -> dict[str, list]:
    with slack_api.FakeSlack() as fake:
        settings = SlackSettings(api_url=f"{fake.url}/api", files_url=fake.url)

        async def need(name: str) -> str:
            return slack_api.APP_TOKEN

        channel = SlackChannel(settings, need)
        await channel.connect(slack_api.BOT_TOKEN, None)
        try:
            return await timed(channel, fake.say, count)
        finally:
            await channel.close()


async def discord(count: int) -> dict[str, list]:
    with discord_api.FakeDiscord() as fake:
        settings = DiscordSettings(api_url=f"{fake.url}/api/v10")
        channel = DiscordChannel(settings)
        await channel.connect(discord_api.TOKEN, None)
        try:
            return await timed(channel, fake.say, count)
        finally:
            await channel.close()


def row(name: str, what: str, values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"{name:8} {what:8} median {statistics.median(ordered):6.1f} ms   p95 {p95:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=200, help="messages per channel")
    count = parser.parse_args().messages
    runs: dict[str, Callable[[int], Awaitable[dict[str, list]]]] = {
        "slack": slack,
        "discord": discord,
    }
    for name, run in runs.items():
        figures = asyncio.run(run(count))
        for what, values in figures.items():
            print(row(name, what, values))


if __name__ == "__main__":
    main()
