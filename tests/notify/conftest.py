"""Butlers with channels, over a real database, and a runtime whose answer the test writes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from butler.config import ButlerConfig, load_config
from butler.context import ButlerContext
from butler.daemon import assemble
from butler.runtimes.base import Invocation, ProgressSink, RuntimeAdapter, RuntimeResult
from butler.runtimes.registry import register
from butler.store.db import Database
from tests.helpers import free_port, write_butler

Script = Callable[[Invocation], Awaitable[RuntimeResult]]


async def _answer(invocation: Invocation) -> RuntimeResult:
    return RuntimeResult(output=f"answer to: {invocation.prompt}")


class ScriptedAdapter(RuntimeAdapter):
    """A runtime that runs the test's ``script`` (by default it answers at once)."""

    type_name = "scripted"
    binary_name = "scripted"
    script: Script = staticmethod(_answer)  # type: ignore[assignment]

    async def invoke(
        self, invocation: Invocation, progress: ProgressSink | None = None
    ) -> RuntimeResult:
        return await ScriptedAdapter.script(invocation)


register("scripted", f"{__name__}:ScriptedAdapter")


def toml_value(value: Any) -> str:
    """A Python value as TOML (strings, numbers, lists and inline tables of them)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


def notify_table(channels: dict[str, Any], **keys: Any) -> str:
    """A ``[butler.notify]`` table with ``channels`` and other keys."""
    lines = ["", "[butler.notify]"]
    lines += [f"{key} = {toml_value(value)}" for key, value in keys.items()]
    lines += ["", "[butler.notify.channels]"]
    lines += [f"{name} = {toml_value(url)}" for name, url in channels.items()]
    return "\n".join(lines) + "\n"


def schedule_table(name: str, prompt: str, **keys: Any) -> str:
    lines = ["", "[[butler.schedule]]", f'name = "{name}"', 'cron = "0 8 * * *"']
    lines += [f"prompt = {json.dumps(prompt)}"]
    lines += [f"{key} = {toml_value(value)}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def scripted() -> Iterator[type[ScriptedAdapter]]:
    """The scripted runtime; the test sets ``scripted.script``; reset after."""
    yield ScriptedAdapter
    ScriptedAdapter.script = staticmethod(_answer)  # type: ignore[assignment]


@pytest.fixture
def make_config(roster: Path, schema_name: str) -> Callable[..., ButlerConfig]:
    """A butler of the scripted runtime with ``extra`` TOML after its [butler] table."""

    def build(extra: str = "", *, public_url: str | None = None, name: str = "tester"):
        top = f'public_url = "{public_url}"\n' if public_url else ""
        folder = write_butler(
            roster, name, port=free_port(), schema=schema_name, runtime={"type": "scripted"}
        )
        text = (folder / "butler.toml").read_text()
        text = text.replace("[butler.db]", f"{top}\n[butler.db]", 1)
        (folder / "butler.toml").write_text(text + extra)
        return load_config(folder)

    return build


@pytest.fixture
async def make_butler(make_config, db: Database) -> AsyncIterator[Callable[..., Any]]:
    """An assembled butler (stores, spawner, scheduler, notifier) over the test database.

    Its outbox (and any a test put in its place) is stopped when the test ends.
    """
    built: list[ButlerContext] = []

    async def build(extra: str = "", **kwargs: Any) -> ButlerContext:
        butler = await assemble(make_config(extra, **kwargs), db)
        built.append(butler)
        return butler

    yield build
    for butler in built:
        await butler.notifier.stop()


async def deliveries(db: Database, session_id: str | None = None) -> list[dict[str, Any]]:
    """Every delivery recorded (of one session, when given), oldest first, bodies included."""
    rows = await db.fetch("SELECT * FROM deliveries ORDER BY created_at, channel")
    found = [dict(r) for r in rows]
    if session_id is not None:
        found = [r for r in found if str(r["session_id"]) == session_id]
    return found
